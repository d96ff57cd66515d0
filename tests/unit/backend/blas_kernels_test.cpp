// OpenBLAS's kernel choice against the CPU (backend/cpu/blas_kernels.h): kernels of an older
// instruction set are replaced by the CPU's own, never by newer ones than it has; a
// user's OPENBLAS_CORETYPE and kernels the table does not know are left alone.
#include "backend/cpu/blas_kernels.h"

#include <gtest/gtest.h>

namespace nn::test {
namespace {

TEST(BlasKernels, OlderKernelsAreReplacedByTheCpusOwn) {
  EXPECT_EQ(blas_kernels_override("Prescott", 4, nullptr), "SkylakeX");
  EXPECT_EQ(blas_kernels_override("Prescott", 3, nullptr), "Haswell");
  EXPECT_EQ(blas_kernels_override("Haswell", 4, nullptr), "SkylakeX");
  EXPECT_EQ(blas_kernels_override("Nehalem", 2, nullptr), "Sandybridge");
  EXPECT_EQ(blas_kernels_override("Prescott", 4, ""), "SkylakeX") << "an empty variable is unset";
}

TEST(BlasKernels, MatchingKernelsTheUsersChoiceAndUnknownNamesAreKept) {
  EXPECT_EQ(blas_kernels_override("SkylakeX", 4, nullptr), "");
  EXPECT_EQ(blas_kernels_override("Cooperlake", 4, nullptr), "");
  EXPECT_EQ(blas_kernels_override("Zen", 3, nullptr), "");
  EXPECT_EQ(blas_kernels_override("SkylakeX", 3, nullptr), "") << "never newer than the CPU";
  EXPECT_EQ(blas_kernels_override("Prescott", 1, nullptr), "");
  EXPECT_EQ(blas_kernels_override("Prescott", 4, "Prescott"), "");
  EXPECT_EQ(blas_kernels_override("SomeFutureCore", 4, nullptr), "");
}

TEST(BlasKernels, TheNoteNamesTheKernelsInUse) {
  const std::string note = blas_kernels_note();
  EXPECT_NE(note.find("OpenBLAS " + blas_kernels() + " kernels"), std::string::npos) << note;
}

}  // namespace
}  // namespace nn::test
