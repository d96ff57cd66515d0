// The scoring pass of a prediction job (see scoring_pass.h).
#include "predict/scoring_pass.h"

#include <vector>

namespace nn {
namespace {

const SampleFilters& no_filters() {
  static const SampleFilters none;
  return none;
}

}  // namespace

void run_scoring_pass(Predictor& predictor, Network& net, const ScoringPass& pass,
                      ExampleRange range,
                      const std::function<void(uint64_t, uint32_t, const TopK&)>& emit) {
  const SampleFilters& filters = pass.filters ? *pass.filters : no_filters();
  if (!pass.dump && pass.rank) {
    // Ranked on the backend (Predictor::run_top_k). The filter's lists are ascending, as
    // top_k_filtered wants them.
    predictor.run_top_k(
        pass.layer, pass.k, pass.valid_cols,
        [&](uint64_t e) { return row_filter(filters, pass.first_example + e, pass.multiply); },
        [&](uint64_t first, uint32_t rows, const TopK& top) {
          emit(pass.first_example + first, rows, top);
        },
        range.begin, range.end);
    return;
  }
  // Every score comes to the host: the dump writes them (one process, so every unit is here)
  // and the ranking, if any, runs on the host.
  std::vector<const std::vector<uint32_t>*> excluded;
  std::vector<float> scaled, dumped;
  TopK top;
  Layer& scored = net.layer(pass.layer);
  predictor.run(
      pass.layer,
      [&](uint64_t local_first, uint32_t rows, const float* scores_in) {
        const uint64_t first = pass.first_example + local_first;
        if (pass.dump) {
          const float* values = scores_in;
          if (pass.dump_layer != &scored) {
            dumped.resize(size_t(rows) * pass.dump_layer->units());
            pass.dump_layer->download_activations(net.backend(), rows, pass.dump_layer->units(),
                                                  dumped.data());
            values = dumped.data();
          }
          pass.dump->add(first, rows, values, pass.sample_name);
        }
        if (!pass.rank) return;
        const float* scores = apply_filters(filters, pass.multiply, first, rows, pass.units,
                                            scores_in, scaled, excluded);
        top_k_rows(
            scores, rows, pass.units, pass.valid_cols, pass.k,
            [&](uint32_t r) { return excluded[r]; }, top, pass.threads);
        emit(first, rows, top);
      },
      range.begin, range.end);
}

}  // namespace nn
