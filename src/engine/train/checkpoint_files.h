// The checkpoint files of a training run on disk: which one a resumed run continues from, and
// how a divergence message names the one to go back to.
#pragma once

#include <cstdint>
#include <string>

namespace nn {

// Newest "<checkpoint_name><epoch>.nc" on disk (the highest epoch), spelled as the prefix was
// given ("ck" -> "ck3.nc", "dir/ck" -> "dir/ck3.nc"); "" when there is none. *epoch (when given)
// receives its epoch, 0 when there is none.
std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch = nullptr);

// The training loop's divergence message with its generic checkpoint remark replaced by the
// checkpoint to go back to (`checkpoint`: the last one written or resumed from; "" when none).
std::string with_checkpoint_note(std::string message, const std::string& checkpoint);

}  // namespace nn
