// The CUDA module's contract (backend/cuda_module_fingerprint.h, backend/cuda_module.h): a module
// built from other interface headers is refused by name, with both fingerprints and how to
// rebuild it; a module of this build is accepted. The stale interface is backend.h with one
// virtual function added, hashed by the build's own routine (tests/support/
// cuda_module_variants.cmake), so these tests fail if the digest missed such a change. No GPU
// and no CUDA library is needed: the loading tests open stand-in modules
// (tests/support/fake_cuda_module.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/cuda_module.h"
#include "backend/cuda_module_fingerprint.h"
#include "nn_test/cuda_module_variants.h"

namespace nn {
namespace {

const std::string kPath = "/opt/nn/lib/libnn_cuda.so";
const std::string kRebuild = "; rebuild it with the tools (bash scripts/setup.sh nn_cuda)";

std::string short_digest(const std::string& digest) {
  return digest.substr(0, 16);
}

TEST(CudaModuleContract, DigestIsASha256OfTheHeaders) {
  const std::string digest = NN_CUDA_MODULE_INTERFACE_DIGEST;
  ASSERT_EQ(digest.size(), 64u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  EXPECT_NE(cuda_module_fingerprint().find(" interface " + digest + " abi "), std::string::npos)
      << cuda_module_fingerprint();
}

TEST(CudaModuleContract, AnAddedVirtualFunctionChangesTheDigest) {
  EXPECT_STRNE(NN_TEST_STALE_INTERFACE_DIGEST, NN_CUDA_MODULE_INTERFACE_DIGEST);
}

TEST(CudaModuleContract, CommentsAndBlankLinesLeaveTheDigest) {
  EXPECT_STREQ(NN_TEST_COMMENTED_INTERFACE_DIGEST, NN_CUDA_MODULE_INTERFACE_DIGEST);
}

TEST(CudaModuleContract, AcceptsThisBuildsFingerprint) {
  EXPECT_EQ(cuda_module_refusal(cuda_module_fingerprint().c_str(), kPath), "");
}

TEST(CudaModuleContract, RefusesAStaleInterface) {
  const std::string stale = cuda_module_fingerprint_of(NN_TEST_STALE_INTERFACE_DIGEST);
  EXPECT_EQ(cuda_module_refusal(stale.c_str(), kPath),
            kPath + " is from another build (interface " +
                short_digest(NN_TEST_STALE_INTERFACE_DIGEST) + "; this program: interface " +
                short_digest(NN_CUDA_MODULE_INTERFACE_DIGEST) + ")" + kRebuild);
}

// Only the first 16 hex digits are shown, but all 64 are compared.
TEST(CudaModuleContract, ComparesTheWholeDigest) {
  std::string digest = NN_CUDA_MODULE_INTERFACE_DIGEST;
  digest.back() = digest.back() == '0' ? '1' : '0';
  const std::string other = cuda_module_fingerprint_of(digest);
  const std::string shown = "interface " + short_digest(digest);
  EXPECT_EQ(
      cuda_module_refusal(other.c_str(), kPath),
      kPath + " is from another build (" + shown + "; this program: " + shown + ")" + kRebuild);
}

// The same headers compiled with other layouts (compiler flags): the sizes are shown, being
// what differs.
TEST(CudaModuleContract, RefusesOtherSizesAndShowsThem) {
  const std::string ours = cuda_module_fingerprint();
  const std::string abi = ours.substr(ours.find(" abi ") + 5);
  const std::string other = ours + " 8";
  const std::string shown = "interface " + short_digest(NN_CUDA_MODULE_INTERFACE_DIGEST);
  EXPECT_EQ(cuda_module_refusal(other.c_str(), kPath),
            kPath + " is from another build (" + shown + " abi " + abi +
                " 8; this program: " + shown + " abi " + abi + ")" + kRebuild);
}

// A module from before the interface digest (format 1), or one with no fingerprint at all.
TEST(CudaModuleContract, RefusesAnOldOrMissingFingerprint) {
  const std::string ours = "interface " + short_digest(NN_CUDA_MODULE_INTERFACE_DIGEST);
  EXPECT_EQ(cuda_module_refusal("nn-cuda-module 1 96 80 24", kPath),
            kPath + " is from another build (nn-cuda-module 1 96 80 24; this program: " + ours +
                ")" + kRebuild);
  EXPECT_EQ(cuda_module_refusal(nullptr, kPath),
            kPath + " is from another build (?; this program: " + ours + ")" + kRebuild);
}

// cuda_module() opens the module once per process, so each load runs in a process of its own: a
// death test in the "threadsafe" style runs this program again for the statement alone. The
// child reports on stderr and exits 0 when the module was accepted, 1 when refused.
void load_and_report(const char* module) {
  setenv("NN_CUDA_MODULE", module, 1);
  std::string why;
  const CudaModule* m = cuda_module(&why);
  if (m)
    std::fprintf(stderr, "accepted: %s\n", m->fingerprint);
  else
    std::fprintf(stderr, "refused: %s\n", why.c_str());
  std::exit(m ? 0 : 1);
}

// Skips where the engine opens no module (a build without CUDA), or where the stand-in is not
// there (this binary carried to another machine, as scripts/gpu-bundle.sh does).
#ifdef NN_HAVE_CUDA
#define NN_SKIP_UNLESS_LOADABLE(module) \
  if (access(module, F_OK) != 0) GTEST_SKIP() << module << " is not here (built elsewhere)"
#else
#define NN_SKIP_UNLESS_LOADABLE(module) \
  GTEST_SKIP() << "this build has no CUDA support: cuda_module() opens nothing"
#endif

TEST(CudaModuleLoadDeathTest, RefusesAModuleOfAStaleInterface) {
  NN_SKIP_UNLESS_LOADABLE(NN_TEST_STALE_CUDA_MODULE);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // (The path itself is not in the pattern: a directory may hold characters special to it.)
  const std::string refusal =
      "refused: /.*/libnn_test_cuda_module_stale.so is from another build \\(interface " +
      short_digest(NN_TEST_STALE_INTERFACE_DIGEST) + "; this program: interface " +
      short_digest(NN_CUDA_MODULE_INTERFACE_DIGEST) +
      "\\); rebuild it with the tools \\(bash scripts/setup.sh nn_cuda\\)";
  EXPECT_EXIT(load_and_report(NN_TEST_STALE_CUDA_MODULE), testing::ExitedWithCode(1), refusal);
}

// The control: the same stand-in with this build's fingerprint loads, so the refusal above is
// the fingerprint's doing.
TEST(CudaModuleLoadDeathTest, AcceptsAModuleOfThisBuild) {
  NN_SKIP_UNLESS_LOADABLE(NN_TEST_CURRENT_CUDA_MODULE);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(load_and_report(NN_TEST_CURRENT_CUDA_MODULE), testing::ExitedWithCode(0),
              "accepted: nn-cuda-module 2 interface " NN_CUDA_MODULE_INTERFACE_DIGEST " abi ");
}

}  // namespace
}  // namespace nn
