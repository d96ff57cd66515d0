// Loss-curve picture from the epoch log (see loss_curve.h): a gnuplot or matplotlib script is
// written to a private temporary directory and run with its output discarded; the picture it
// draws there is then written to its place atomically (core/atomic_file.h). The directory is
// named after the process ("nn-train-plot-<pid>-XXXXXX"), so one that a killed run left is
// removed by the next plot once its process is gone.
#include "train/loss_curve.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/atomic_file.h"

namespace nn {
namespace {

constexpr const char* kPlotDirPrefix = "nn-train-plot-";

// Removes plot directories in `tmp` whose process no longer exists.
void remove_stale_plot_dirs(const std::string& tmp) {
  DIR* d = ::opendir(tmp.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  const std::string prefix = kPlotDirPrefix;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t dash = name.find('-', prefix.size());
    const std::string pid = name.substr(prefix.size(), dash - prefix.size());
    if (dash == std::string::npos || pid.empty() || pid.size() > 9 ||
        pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(pid_t(std::stol(pid)), 0) != 0 && errno == ESRCH) stale.push_back(tmp + "/" + name);
  }
  ::closedir(d);
  std::error_code ec;
  for (const std::string& dir : stale) std::filesystem::remove_all(dir, ec);
}

// True when `program` is an executable file in one of PATH's directories.
bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Runs a shell command with its output discarded; true on exit status 0.
bool run_quietly(const std::string& command) {
  const int status = std::system((command + " >/dev/null 2>&1").c_str());
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Curve {
  std::vector<double> epoch, loss, val_epoch, val;
  std::string metric;
};

Curve read_curve(const std::string& log_path) {
  Curve c;
  std::ifstream in(log_path);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("epoch") || !j["loss"].is_number()) continue;
    c.epoch.push_back(j["epoch"].get<double>());
    c.loss.push_back(j["loss"].get<double>());
    if (j.contains("validation") && j["validation"].is_object() && !j["validation"].empty()) {
      const auto first = j["validation"].begin();
      if (!first.value().is_number()) continue;
      c.metric = first.key();
      c.val_epoch.push_back(c.epoch.back());
      c.val.push_back(first.value().get<double>());
    }
  }
  return c;
}

bool plot_gnuplot(const Curve& c, const std::string& png, const std::string& dir) {
  const std::string data = dir + "/curve.dat", vdata = dir + "/validation.dat",
                    script = dir + "/curve.gp";
  {
    std::ofstream d(data), v(vdata);
    for (size_t i = 0; i < c.epoch.size(); ++i) d << c.epoch[i] << ' ' << c.loss[i] << '\n';
    for (size_t i = 0; i < c.val.size(); ++i) v << c.val_epoch[i] << ' ' << c.val[i] << '\n';
  }
  std::ofstream s(script);
  // noenhanced: metric names such as "recall@10" are printed as written ('@' is markup otherwise).
  s << "set terminal png size 900,540\nset termoption noenhanced\n"
    << "set output '" << png << "'\n"
    << "set xlabel 'epoch'\nset ylabel 'training loss'\nset grid\nset key below\n";
  if (!c.val.empty())
    s << "set y2label '" << c.metric << "'\nset ytics nomirror\nset y2tics\n"
      << "plot '" << data << "' using 1:2 with linespoints title 'training loss', '" << vdata
      << "' using 1:2 axes x1y2 with linespoints title 'validation " << c.metric << "'\n";
  else
    s << "plot '" << data << "' using 1:2 with linespoints title 'training loss'\n";
  s.close();
  return run_quietly("gnuplot " + shell_quote(script));
}

bool plot_matplotlib(const Curve& c, const std::string& png, const std::string& dir) {
  const std::string script = dir + "/curve.py";
  auto list = [](const std::vector<double>& v) {
    std::ostringstream o;
    o.precision(17);
    o << '[';
    for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
    return o.str() + ']';
  };
  std::ofstream s(script);
  s << "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    << "fig, ax = plt.subplots(figsize=(9, 5.4))\n"
    << "ax.plot(" << list(c.epoch) << ", " << list(c.loss) << ", 'o-', label='training loss')\n"
    << "ax.set_xlabel('epoch'); ax.set_ylabel('training loss'); ax.grid(True)\n";
  if (!c.val.empty())
    s << "ax2 = ax.twinx()\nax2.plot(" << list(c.val_epoch) << ", " << list(c.val)
      << ", 's-', color='tab:orange', label='validation " << c.metric << "')\n"
      << "ax2.set_ylabel('" << c.metric << "')\n";
  s << "fig.legend(loc='lower center', ncol=2)\n";
  s << "fig.savefig(" << nlohmann::json(png).dump() << ", dpi=100)\n";
  s.close();
  return run_quietly("python3 " + shell_quote(script));
}

}  // namespace

bool plot_epoch_log(const std::string& log_path, const std::string& png, const LogSink& log) {
  try {
    const bool gnuplot = on_path("gnuplot");
    const bool python =
        !gnuplot && on_path("python3") && run_quietly("python3 -c 'import matplotlib'");
    if (!gnuplot && !python) {
      log("loss curve not drawn: neither gnuplot nor python3 with matplotlib is installed (the "
          "numbers are in " +
          log_path + ")");
      return false;
    }
    const Curve c = read_curve(log_path);
    if (c.epoch.empty()) return false;
    const std::string tmp = temporary_directory();
    remove_stale_plot_dirs(tmp);
    std::string tmpl = tmp + "/" + kPlotDirPrefix + std::to_string(::getpid()) + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
      log("loss curve not drawn: cannot create a temporary directory in " + tmp);
      return false;
    }
    const std::string dir = tmpl;
    struct RemoveDir {  // also when writing the picture fails
      const std::string& dir;
      ~RemoveDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    } remove_dir{dir};
    const std::string drawn = dir + "/curve.png";
    bool ok = gnuplot ? plot_gnuplot(c, drawn, dir) : plot_matplotlib(c, drawn, dir);
    if (ok) {
      std::ifstream in(drawn, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      ok = in.good() || in.eof();
      if (ok && !bytes.empty()) write_file_atomically(png, bytes);
      ok = ok && !bytes.empty();
    }
    if (!ok) {
      log(std::string("loss curve not drawn: ") + (gnuplot ? "gnuplot" : "matplotlib") +
          " failed (the numbers are in " + log_path + ")");
      return false;
    }
    log("wrote the loss curve " + png);
    return true;
  } catch (const std::exception& e) {
    log(std::string("loss curve not drawn: ") + e.what());
    return false;
  }
}

}  // namespace nn
