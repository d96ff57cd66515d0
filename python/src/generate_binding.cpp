// Dataset files from Python, so that a program needs no command-line tool to make the data a
// CDL file names: nnsuite.generate (text examples or rating rows -> a NetCDF dataset file with
// its feature and sample index files, as nn-generate makes them; the library's
// DatasetGenerator) and nnsuite.write_datasets (arrays -> a NetCDF dataset file).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "nn/generate.h"

namespace py = pybind11;

#pragma GCC visibility push(hidden)
namespace nnpy {

void bind_generate(py::module_& m) {
  m.def(
      "generate",
      [](const py::object& input, const py::object& output, const std::string& dataset,
         const py::object& features, const py::object& samples, bool create_features,
         bool merge_features, bool analog, bool rows, bool header, uint32_t align) {
        if (create_features && merge_features)
          throw py::value_error("create_features and merge_features: give one, not both");
        if (header && !rows) throw py::value_error("header: needs rows=True");
        if (dataset.empty()) throw py::value_error("dataset: expected a non-empty name");
        nn::api::GenerateJob job;
        job.input = path_arg(input, "input");
        job.output = path_arg(output, "output");
        job.dataset = dataset;
        job.features = path_arg(features, "features");
        job.samples = path_arg(samples, "samples");
        job.create_features = create_features;
        job.merge_features = merge_features;
        job.analog = analog;
        job.rows = rows;
        job.header = header;
        job.align = align;
        nn::api::GenerateReport r;
        {
          py::gil_scoped_release release;
          nn::api::DatasetGenerator generator(job);
          r = generator.generate();
        }
        py::dict out;
        out["samples"] = r.samples;
        out["entries"] = r.entries;
        out["features"] = r.features;
        out["new_features"] = r.new_features;
        out["width"] = r.width;
        out["dropped_features"] = r.dropped_features;
        out["skipped_lines"] = r.skipped_lines;
        return out;
      },
      py::arg("input"), py::arg("output"), py::arg("dataset"), py::arg("features"),
      py::arg("samples"), py::arg("create_features") = false, py::arg("merge_features") = false,
      py::arg("analog") = false, py::arg("rows") = false, py::arg("header") = false,
      py::arg("align") = 128,
      "Writes a NetCDF dataset file from text examples as nn-generate does.\n\n"
      "input: a text file of 'sample<TAB>feature[,value]:...' lines, or with rows=True one\n"
      "  'sample,feature[,value]' row per entry (a ratings CSV; header=True skips each file's\n"
      "  first line). output: the NetCDF file (replaced). dataset: the dataset's name, the\n"
      "  DataSet a layer names. features / samples: index files ('label<TAB>index'); the sample\n"
      "  index is loaded when it exists, else created. create_features=True builds a new feature\n"
      "  index from this input; merge_features=True adds this input's new features to it;\n"
      "  neither: the feature index is fixed and unknown features are dropped (counted).\n"
      "analog=True keeps the values (default: every entry is 1). Returns the counts written:\n"
      "{samples, entries, features, new_features, width, dropped_features, skipped_lines}.");

  m.def(
      "write_datasets",
      [](const py::object& path, const py::dict& data, const py::object& items) {
        const std::string p = path_arg(path, "path");
        if (data.size() == 0) throw py::value_error("data: expected at least one dataset");
        std::vector<nn::api::Dataset> sets;
        for (auto item : data) {
          if (!py::isinstance<py::str>(item.first))
            throw py::type_error("data: keys are dataset names (str)");
          const std::string name = py::str(item.first);
          sets.push_back(to_dataset(name, item.second));
        }
        if (!items.is_none()) {
          if (!py::isinstance<py::dict>(items))
            throw py::type_error("items: expected a dict {dataset name: [feature names]}");
          for (auto item : py::reinterpret_borrow<py::dict>(items)) {
            const std::string name = py::str(item.first);
            bool found = false;
            for (auto& d : sets) {
              if (d.name() != name) continue;
              std::vector<std::string> names;
              for (auto n : item.second) names.push_back(py::str(n).cast<std::string>());
              d = d.with_feature_names(std::move(names));
              found = true;
            }
            if (!found) throw py::value_error("items: no dataset named '" + name + "' in data");
          }
        }
        py::gil_scoped_release release;
        nn::api::Dataset::write_netcdf(p, sets);
      },
      py::arg("path"), py::arg("data"), py::arg("items") = py::none(),
      "Writes {dataset name: numpy array or scipy.sparse CSR matrix} to one NetCDF dataset file,\n"
      "as nn-generate lays it out (a CSR matrix whose values are all 1 is an indicator dataset).\n"
      "items: {dataset name: the names of its columns, in order} ('' for an unnamed column); a\n"
      "network trained on the file records them as its items. read_datasets reads it back.");
}

}  // namespace nnpy
#pragma GCC visibility pop
