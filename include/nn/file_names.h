// Public API: whether two file names mean one file, and the check the jobs and tools make
// before they write anything. Two outputs naming one file ("x.idx" and "./x.idx", or a link to
// it) would leave only the one written last; an output naming an input would replace the data
// it is made from. Both happen silently unless refused first.
#pragma once

#include <string>
#include <vector>

namespace nn::api {

// A file name and what names it in messages: a flag ("-f") or a job field ("features").
struct NamedFile {
  std::string option;
  std::string path;
};

// True when `a` and `b` name one file: for existing files, the same device and inode (hard and
// symbolic links count); otherwise the same absolute path once ".", ".." and the symbolic links
// of existing directories are resolved. "-" is the same only as "-".
bool same_file(const std::string& a, const std::string& b);

// Throws nn::ArgumentError naming both options when two outputs, or an output and an input,
// name one file ("-f x.idx and -s ./x.idx name the same file; each output needs a file of its
// own"), or when two outputs are standard output ("-"). Empty names are ignored, and so are
// existing files that are written in place rather than replaced (/dev/null, FIFOs, terminals).
void check_distinct_files(const std::vector<NamedFile>& outputs,
                          const std::vector<NamedFile>& inputs = {});

}  // namespace nn::api
