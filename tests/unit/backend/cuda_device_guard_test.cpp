// Every CudaBackend entry point runs on its backend's device (cuda/device_guard.h): a source scan,
// since two GPUs are needed to see the difference at run time (cuda/cuda_devices_test.cpp does
// that on a machine with two). It reads the class definition in cuda/cuda_backend.h and every
// CudaBackend:: definition in src/engine/backend/cuda/, and requires that
//   * every member function declared in the class is either defined out of line, with the
//     guard as the first statement of its body, or is one of the inline accessors below that
//     make no CUDA call;
//   * no out-of-line definition lacks the guard (a new method added without one fails here).
// Runs in every build (it reads sources only).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace nn {
namespace {

namespace fs = std::filesystem;

const fs::path kCudaDir = fs::path(NN_SOURCE_DIR) / "src/engine/backend/cuda";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The source without // and /* */ comments (string literals here hold no comment markers).
std::string strip_comments(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
      out += '\n';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 1;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Declared {
  std::set<std::string> out_of_line, inline_bodies;
};

// The member functions declared in `class CudaBackend ... { ... };`: statements at brace depth
// 0 of the class body whose first "name(" is the function's name; those with a body in the
// class are inline. Deleted functions are not members that run.
Declared declared_members(const std::string& header) {
  // Access labels are no statements: drop them ("public:", not "::").
  const std::string text = std::regex_replace(
      strip_comments(header), std::regex(R"(\b(public|private|protected)\s*:(?!:))"), ";");
  const size_t open = text.find('{', text.find("class CudaBackend final"));
  EXPECT_NE(open, std::string::npos) << "class CudaBackend not found";
  Declared d;
  if (open == std::string::npos) return d;
  const std::regex name_re(R"((~?[A-Za-z_][A-Za-z0-9_]*)\s*\()");
  std::string statement;
  int depth = 0;
  bool has_body = false;
  auto finish = [&] {
    std::smatch m;
    if (statement.find("= delete") == std::string::npos &&
        std::regex_search(statement, m, name_re)) {
      const std::string name = m[1];
      // Not a function: "enum Slot {...}", members initialised with a call, etc.
      const std::string before = m.prefix();
      if (before.find('=') == std::string::npos && before.find("enum") == std::string::npos &&
          before.find("struct") == std::string::npos)
        (has_body ? d.inline_bodies : d.out_of_line).insert(name);
    }
    statement.clear();
    has_body = false;
  };
  for (size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (depth == 0 && c == '}') break;  // end of the class
    if (c == '{') {
      // A body, unless it is an initialiser ("= {}", a default argument or member value).
      const size_t last = statement.find_last_not_of(" \t\n");
      const bool initialiser = last != std::string::npos && statement[last] == '=';
      if (depth == 0 && !initialiser && statement.find('(') != std::string::npos) has_body = true;
      ++depth;
    }
    statement += c;
    if (c == '}' && --depth == 0 && has_body) finish();
    if (c == ';' && depth == 0) finish();
  }
  return d;
}

// name -> the first statement of each out-of-line definition "... CudaBackend::name(...) ... {"
// in `source` (a .cu / .cpp file's text).
void definitions_in(const std::string& source, const std::string& file,
                    std::multimap<std::string, std::string>& out) {
  static const std::regex def_re(
      R"((^|\n)(?=[^\s/#])[^;{}\n]*?\bCudaBackend::(~?[A-Za-z_][A-Za-z0-9_]*)\s*\()");
  const std::string text = strip_comments(source);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), def_re);
       it != std::sregex_iterator(); ++it) {
    const size_t after = size_t(it->position(0) + it->length(0));
    const size_t brace = text.find('{', after);
    const size_t semicolon = text.find(';', after);
    if (brace == std::string::npos || semicolon < brace) continue;  // a declaration or a call
    const size_t end = text.find(';', brace);
    std::string first = text.substr(brace + 1, end - brace);
    first = std::regex_replace(first, std::regex(R"(\s+)"), " ");
    out.emplace((*it)[2].str(), first + "  [" + file + "]");
  }
}

std::multimap<std::string, std::string> definitions() {
  std::multimap<std::string, std::string> out;
  for (const auto& entry : fs::directory_iterator(kCudaDir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".cu" || ext == ".cpp")
      definitions_in(read(entry.path()), entry.path().filename().string(), out);
  }
  return out;
}

bool starts_with_guard(const std::string& first_statement) {
  static const std::regex guard(R"(^ ?const cuda::DeviceGuard guard\(device_(, std::nothrow)?\);)");
  return std::regex_search(first_statement, guard);
}

TEST(CudaDeviceGuard, EveryCudaBackendEntryPointStartsWithTheGuard) {
  const Declared declared = declared_members(read(kCudaDir / "cuda_backend.h"));
  const auto defined = definitions();
  // Inline accessors: they read members and make no CUDA call.
  const std::set<std::string> accessors = {"name",
                                           "device",
                                           "tf32",
                                           "host_memory",
                                           "stream",
                                           "error_flag",
                                           "scratch_capacity",
                                           "precision",
                                           "presorted_targets",
                                           "shareable_between_threads"};
  ASSERT_GT(declared.out_of_line.size(), 50u) << "the class scan found too few members";
  for (const std::string& name : declared.inline_bodies)
    EXPECT_TRUE(accessors.count(name))
        << "CudaBackend::" << name
        << " has a body in the class: define it out of line, starting with the DeviceGuard";
  for (const std::string& name : declared.out_of_line)
    EXPECT_TRUE(defined.count(name)) << "CudaBackend::" << name << " declared, no definition found";
  for (const auto& [name, first] : defined)
    EXPECT_TRUE(starts_with_guard(first))
        << "CudaBackend::" << name << " does not start with the DeviceGuard: " << first;
  EXPECT_TRUE(defined.count("CudaBackend") && defined.count("~CudaBackend") &&
              defined.count("top_k_filtered") && defined.count("cudnn"));
}

// The scan itself: it must see a missing guard, an inline body and a member without definition.
TEST(CudaDeviceGuard, TheScanSeesWhatItChecks) {
  EXPECT_TRUE(starts_with_guard(" const cuda::DeviceGuard guard(device_); x;"));
  EXPECT_TRUE(starts_with_guard(" const cuda::DeviceGuard guard(device_, std::nothrow);"));
  EXPECT_FALSE(starts_with_guard(" if (n == 0) return;"));
  const Declared d = declared_members(R"(
class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, bool tf32, const Settings& s = {});
  CudaBackend(const CudaBackend&) = delete;
  std::string name() const override { return "cuda"; }
  void fill(float* x, size_t n, float value) override;  // a comment (with parentheses)
  enum Slot { kSlotA, kSlotCount };
 private:
  struct Staging {
    void* host = nullptr;
  };
  Staging& staging_slot(size_t bytes);
  int device_ = 0;
};
)");
  EXPECT_EQ(d.out_of_line, (std::set<std::string>{"CudaBackend", "fill", "staging_slot"}));
  EXPECT_EQ(d.inline_bodies, (std::set<std::string>{"name"}));
  std::multimap<std::string, std::string> defs;
  definitions_in(R"(
CudaBackend::CudaBackend(int device, bool tf32) : device_(device), tf32_(tf32) {
  const cuda::DeviceGuard guard(device_);
}
void CudaBackend::fill(float* x, size_t n,
                       float value) {
  if (n == 0) return;  // no guard
  b.scratch(CudaBackend::kSlotA, n);
}
)",
                 "fake.cu", defs);
  ASSERT_EQ(defs.size(), 2u);
  EXPECT_TRUE(starts_with_guard(defs.find("CudaBackend")->second));
  EXPECT_FALSE(starts_with_guard(defs.find("fill")->second));
}

}  // namespace
}  // namespace nn
