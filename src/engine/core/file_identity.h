// Whether two file names mean one file, however they are spelled ("x.idx", "./x.idx",
// "dir/../x.idx", a symbolic or hard link), and the check every tool and job makes before it
// writes anything: two outputs naming one file would leave only the one renamed last, and an
// output naming an input would replace the data it was made from, both silently.
#pragma once

#include <string>
#include <vector>

namespace nn {

// A file name with what names it in messages: a flag ("-f") or a job field ("features").
struct NamedFile {
  std::string option;
  std::string path;
};

// True when `a` and `b` name one file: for existing files, the same device and inode (so links
// count); otherwise the same absolute path once ".", ".." and the symbolic links of existing
// directories are resolved. "-" (standard output or input) is only the same as "-".
bool same_file(const std::string& a, const std::string& b);

// Throws ArgumentError naming both options when two `outputs`, or an output and one of the
// `inputs`, name one file ("-f x.idx and -s ./x.idx name the same file; each output needs a file
// of its own"). Empty names are ignored, and so are existing files that are not regular files
// (/dev/null, a FIFO, a terminal): writes to them append rather than replace. Two outputs to
// standard output ("-") are refused too; standard input and output never conflict.
void check_distinct_files(const std::vector<NamedFile>& outputs,
                          const std::vector<NamedFile>& inputs = {});

}  // namespace nn
