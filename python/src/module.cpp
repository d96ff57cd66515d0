// nnsuite._core: the Python binding of the library API (include/nn/). Thin: argument checking
// and NumPy conversion (arrays.h) around Model, Evaluator, Trainer and Dataset; every compute
// call releases the GIL. The pure-Python package (python/nnsuite/__init__.py) re-exports it.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "nn/nn.h"

namespace py = pybind11;
using namespace nn::api;

// Hidden visibility: the module exports only its init function (pybind11 recommends it).
#pragma GCC visibility push(hidden)
namespace nnpy {
namespace {

// A Model with a pool of idle Evaluators, so that Model.predict can be called from several
// Python threads at once: each call takes an Evaluator (the lock guards only the pool, never the
// forward pass) and puts it back when done.
struct PyModel {
  std::shared_ptr<Model> model;
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<Evaluator>> idle;

  explicit PyModel(std::shared_ptr<Model> m) : model(std::move(m)) {}
  std::unique_ptr<Evaluator> take() {
    {
      std::lock_guard<std::mutex> lock(pool_mutex);
      if (!idle.empty()) {
        auto e = std::move(idle.back());
        idle.pop_back();
        return e;
      }
    }
    return std::make_unique<Evaluator>(model);
  }
  void give(std::unique_ptr<Evaluator> e) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    idle.push_back(std::move(e));
  }
  // Weights changed or the model was trained: evaluators see the same memory, nothing to do.
};

std::string layer_or_default(const py::object& layer) {
  if (layer.is_none()) return "";
  if (!py::isinstance<py::str>(layer))
    throw py::type_error("layer: expected a layer name (str) or None");
  return layer.cast<std::string>();
}

// `x`: one batch (the network's only input layer), or a dict {input layer name: batch} for
// networks with several input layers. The Evaluator checks names and row counts.
struct Batches {
  std::vector<std::string> names;  // "" for a single batch
  std::vector<Batch> batches;
  uint64_t rows() const { return batches.front().rows; }
  NamedInputs named() const {
    NamedInputs v;
    for (size_t i = 0; i < batches.size(); ++i) v.emplace_back(names[i], batches[i].input());
    return v;
  }
};
Batches to_batches(const py::handle& x) {
  Batches b;
  if (py::isinstance<py::dict>(x)) {
    for (auto item : py::reinterpret_borrow<py::dict>(x)) {
      if (!py::isinstance<py::str>(item.first))
        throw py::type_error("x: dict keys must be input layer names (str)");
      const std::string name = item.first.cast<std::string>();
      b.names.push_back(name);
      b.batches.push_back(to_batch(item.second, "x['" + name + "']"));
    }
    if (b.batches.empty()) throw py::value_error("x: an empty dict; give a batch per input layer");
  } else {
    b.names.push_back("");
    b.batches.push_back(to_batch(x, "x"));
  }
  return b;
}

// Full outputs [rows][units] of `layer`.
py::array_t<float> outputs(Evaluator& ev, const py::handle& x, const py::object& layer) {
  const std::string name = layer_or_default(layer);
  const Batches b = to_batches(x);
  const uint64_t units = ev.units(name);
  py::array_t<float> out({py::ssize_t(b.rows()), py::ssize_t(units)});
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    ev.outputs(b.named(), name, dst);
  }
  return out;
}

// (indices uint32 [rows][k], scores float32 [rows][k]), or full outputs when k is None.
py::object predict(Evaluator& ev, const py::handle& x, const py::object& k_obj,
                   const py::object& exclude, const py::object& layer) {
  if (k_obj.is_none()) {
    if (!exclude.is_none())
      throw py::value_error("exclude: only applies to top-K predictions (give k)");
    return outputs(ev, x, layer);
  }
  if (!py::isinstance<py::int_>(k_obj) || py::isinstance<py::bool_>(k_obj))
    throw py::type_error("k: expected an int or None");
  const long long k = k_obj.cast<long long>();
  const std::string name = layer_or_default(layer);
  const uint64_t units = ev.units(name);
  if (k < 1 || uint64_t(k) > units)
    throw py::value_error("k: must be between 1 and " + std::to_string(units) +
                          " (the units of the scored layer); got " + std::to_string(k));
  const Batches b = to_batches(x);
  ExcludeRows ex;
  const bool has_ex = !exclude.is_none();
  if (has_ex) ex = to_exclude(exclude, b.rows(), units);
  py::array_t<uint32_t> index({py::ssize_t(b.rows()), py::ssize_t(k)});
  py::array_t<float> score({py::ssize_t(b.rows()), py::ssize_t(k)});
  uint32_t* pi = index.mutable_data();
  float* ps = score.mutable_data();
  {
    py::gil_scoped_release release;
    const Exclusion view = ex.view(b.rows());
    ev.top_k(b.named(), uint32_t(k), name, has_ex ? &view : nullptr, pi, ps);
  }
  return py::make_tuple(index, score);
}

ModelOptions model_options(const std::string& backend, int threads, const std::string& precision) {
  if (threads < 0) throw py::value_error("threads: must be 0 (all CPUs) or positive");
  if (backend != "cpu" && backend != "cuda" && backend != "auto")
    throw py::value_error("backend: expected 'cpu', 'cuda' or 'auto'; got '" + backend + "'");
  if (!precision.empty() && precision != "fp32" && precision != "bf16")
    throw py::value_error("precision: expected 'fp32' or 'bf16'; got '" + precision + "'");
  ModelOptions o;
  o.backend = backend;
  o.threads = threads;
  o.precision = precision;
  return o;
}

// Dataset shapes for Model.from_json: {name: int | tuple | dict(shape=..., sparse=...) |
// ndarray | scipy.sparse matrix}.
DataShape data_shape(const std::string& name, const py::handle& v) {
  DataShape s;
  auto set_dims = [&](const py::handle& dims) {
    std::vector<uint32_t> d;
    if (py::isinstance<py::int_>(dims)) {
      d.push_back(dims.cast<uint32_t>());
    } else {
      for (auto x : py::reinterpret_borrow<py::sequence>(dims)) d.push_back(x.cast<uint32_t>());
    }
    if (d.empty() || d.size() > 3)
      throw py::value_error("datasets['" + name + "']: a shape has 1 to 3 dimensions");
    for (uint32_t x : d)
      if (x == 0) throw py::value_error("datasets['" + name + "']: sizes must be positive");
    s.width = d[0];
    if (d.size() > 1) s.height = d[1];
    if (d.size() > 2) s.length = d[2];
  };
  if (is_scipy_sparse(v)) {
    s.width = py::tuple(v.attr("shape"))[1].cast<uint32_t>();
    s.sparse = true;
  } else if (py::isinstance<py::array>(v)) {
    py::array a = py::reinterpret_borrow<py::array>(v);
    if (a.ndim() != 2) throw py::value_error("datasets['" + name + "']: expected a 2-D array");
    s.width = uint32_t(a.shape(1));
  } else if (py::isinstance<py::dict>(v)) {
    py::dict d = py::reinterpret_borrow<py::dict>(v);
    for (auto item : d) {
      const std::string key = py::str(item.first);
      if (key != "shape" && key != "sparse")
        throw py::value_error("datasets['" + name + "']: unknown key '" + key +
                              "'; expected 'shape' and 'sparse'");
    }
    if (!d.contains("shape")) throw py::value_error("datasets['" + name + "']: needs 'shape'");
    set_dims(d["shape"]);
    if (d.contains("sparse")) s.sparse = d["sparse"].cast<bool>();
  } else if (py::isinstance<py::int_>(v) || py::isinstance<py::tuple>(v) ||
             py::isinstance<py::list>(v)) {
    set_dims(v);
  } else {
    throw py::type_error("datasets['" + name +
                         "']: expected a size, a shape tuple, dict(shape=..., sparse=...), an "
                         "array or a scipy.sparse matrix");
  }
  return s;
}

py::object dataset_to_python(const Dataset& d) {
  if (!d.sparse()) {
    std::vector<float> v = d.dense_values();
    py::array_t<float> a({py::ssize_t(d.examples()), py::ssize_t(d.features())});
    std::copy(v.begin(), v.end(), a.mutable_data());
    return a;
  }
  std::vector<uint64_t> row_ptr;
  std::vector<uint32_t> index;
  std::vector<float> values;
  d.csr_arrays(row_ptr, index, values);
  if (values.empty()) values.assign(index.size(), 1.0f);
  py::module_ sp = py::module_::import("scipy.sparse");
  return sp.attr("csr_matrix")(py::make_tuple(py::array(py::cast(values)).attr("astype")("float32"),
                                              py::array(py::cast(index)).attr("astype")("int64"),
                                              py::array(py::cast(row_ptr)).attr("astype")("int64")),
                               py::arg("shape") = py::make_tuple(d.examples(), d.features()));
}

py::dict stats_dict(const EpochStats& s) {
  py::dict d;
  d["epoch"] = s.epoch;
  d["loss"] = s.loss;
  d["data_loss"] = s.data_loss;
  d["reg_loss"] = s.reg_loss;
  d["seconds"] = s.seconds;
  d["examples_per_second"] = s.examples_per_second;
  d["alpha"] = s.alpha;
  return d;
}

// A Python callback (dict -> anything; False stops) as the library's, called with the GIL held.
// An exception inside it stops training and is re-raised once the engine has returned.
struct CallbackBridge {
  py::object fn;
  std::exception_ptr error;
  EpochCallback make() {
    if (fn.is_none()) return nullptr;
    return [this](const EpochStats& s) {
      py::gil_scoped_acquire acquire;
      try {
        py::object r = fn(stats_dict(s));
        return r.is_none() || r.cast<bool>();
      } catch (...) {
        error = std::current_exception();
        return false;
      }
    };
  }
  std::function<void(const std::string&)> log_fn(const py::object& log) {
    if (log.is_none()) return nullptr;
    return [log](const std::string& line) {
      py::gil_scoped_acquire acquire;
      log(line);
    };
  }
};

py::list run_training(const std::function<std::vector<EpochStats>(const EpochCallback&)>& run,
                      const py::object& callback) {
  CallbackBridge bridge{callback, nullptr};
  std::vector<EpochStats> stats;
  {
    py::gil_scoped_release release;
    stats = run(bridge.make());
  }
  if (bridge.error) std::rethrow_exception(bridge.error);
  py::list out;
  for (const auto& s : stats) out.append(stats_dict(s));
  return out;
}

// MPI: initialised here only when an MPI launcher started Python and nobody (mpi4py) has yet;
// finalised at exit only if initialised here (nn/process.h).
std::unique_ptr<nn::api::ProcessSession> mpi_session;

}  // namespace
}  // namespace nnpy
#pragma GCC visibility pop

using namespace nnpy;

const char* const kPredictDoc =
    "Top-k predictions of the output layer (or `layer`) for the batch x: a 2-D float32 array or "
    "a scipy.sparse CSR matrix (a 1-D array is one row), or {input layer name: batch}. Returns "
    "(indices uint32 [rows, k], scores float32 [rows, k]), best first, ties to the lower index; "
    "k=None returns the whole layer's outputs instead. exclude: columns left out of each row's "
    "top k, a CSR matrix with x's rows (x itself: what each user has) or a list of column lists";
const char* const kOutputsDoc =
    "The outputs of the output layer (or `layer`, any layer) for the batch x, float32 [rows, "
    "units]";

PYBIND11_MODULE(_core, m) {
  m.doc() = "nnsuite: the nn engine's Model, Evaluator and Trainer for NumPy and SciPy data";

  static py::exception<nn::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nn::ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nn::DataError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nn::ArgumentError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nn::IoError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const nn::Error& e) {
      PyErr_SetString(error.ptr(), e.what());  // works with pybind11 2.10 and 3.x
    }
  });

  if (nn::api::launched_by_mpi() && !nn::api::mpi_active()) {
    nnpy::mpi_session = std::make_unique<nn::api::ProcessSession>(nullptr, nullptr);
    py::module_::import("atexit").attr("register")(
        py::cpp_function([] { nnpy::mpi_session.reset(); }));
  }
  m.def(
      "mpi_rank", [] { return nn::api::world_rank(); }, "This process's MPI rank (0 without MPI).");
  m.def(
      "mpi_size", [] { return nn::api::world_size(); },
      "Processes in the MPI job (1 without MPI).");
  m.def(
      "blas_kernels", [] { return nn::api::blas_kernels(); },
      "The kernels OpenBLAS runs in this process ('SkylakeX', 'Haswell', 'Prescott', ...).");
  m.def(
      "blas_kernels_override", [] { return nn::api::blas_kernels_override(); },
      "The OPENBLAS_CORETYPE value whose kernels match this CPU when OpenBLAS chose older ones "
      "(a CPU newer than the library), else ''. It takes effect only in a process started with "
      "it set (docs/performance.md).");

  py::class_<LayerInfo>(m, "LayerInfo")
      .def_readonly("name", &LayerInfo::name)
      .def_readonly("kind", &LayerInfo::kind)
      .def_readonly("type", &LayerInfo::type)
      .def_readonly("dataset", &LayerInfo::dataset)
      .def_property_readonly("shape",
                             [](const LayerInfo& l) {
                               py::tuple t(l.shape.size());
                               for (size_t i = 0; i < l.shape.size(); ++i) t[i] = l.shape[i];
                               return t;
                             })
      .def_readonly("units", &LayerInfo::units)
      .def_readonly("sparse_input", &LayerInfo::sparse_input)
      .def("__repr__", [](const LayerInfo& l) {
        return "<Layer '" + l.name + "' " + l.kind + " " + l.type +
               " units=" + std::to_string(l.units) + ">";
      });

  py::class_<WeightInfo>(m, "WeightInfo")
      .def_readonly("name", &WeightInfo::name)
      .def_readonly("layer", &WeightInfo::layer)
      .def_property_readonly("shape",
                             [](const WeightInfo& w) {
                               py::tuple t(w.shape.size());
                               for (size_t i = 0; i < w.shape.size(); ++i) t[i] = w.shape[i];
                               return t;
                             })
      .def_readonly("size", &WeightInfo::size)
      .def("__repr__", [](const WeightInfo& w) { return "<Weight '" + w.name + "'>"; });

  py::class_<Evaluator>(m, "Evaluator",
                        "Forward passes over one Model with buffers of its own; use one per "
                        "thread (many may share a Model).")
      .def(py::init([](PyModel& model, uint32_t max_batch) {
             return std::make_unique<Evaluator>(model.model, max_batch);
           }),
           py::arg("model"), py::arg("max_batch") = 1024, py::keep_alive<1, 2>())
      .def("predict", &predict, py::arg("x"), py::arg("k") = 10, py::arg("exclude") = py::none(),
           py::arg("layer") = py::none(), kPredictDoc)
      .def("outputs", &outputs, py::arg("x"), py::arg("layer") = py::none(), kOutputsDoc);

  py::class_<PyModel>(m, "Model",
                      "A network: topology and parameters, from a network file (Model.load) or a "
                      "network JSON (Model.from_json); predicts from many threads at once.")
      .def_static(
          "load",
          [](const py::object& path_obj, const std::string& backend, int threads,
             const std::string& precision) {
            const std::string path = path_arg(path_obj, "path");
            auto opt = model_options(backend, threads, precision);
            std::shared_ptr<Model> mdl;
            {
              py::gil_scoped_release release;
              mdl = Model::load(path, opt);
            }
            return std::make_unique<PyModel>(mdl);
          },
          py::arg("path"), py::arg("backend") = "cpu", py::arg("threads") = 0,
          py::arg("precision") = "",
          "A network file (nn-train's Results, a checkpoint, or DSSTNE's). backend: 'cpu' or "
          "'cuda'; threads: CPU threads (0: all); precision: '' (the file's), 'fp32' or 'bf16'.")
      .def_static(
          "from_json",
          [](const py::object& json, const py::object& datasets, uint64_t seed,
             const std::string& backend, int threads, const std::string& precision) {
            std::string text;
            if (py::isinstance<py::dict>(json))
              text = py::module_::import("json").attr("dumps")(json).cast<std::string>();
            else if (py::isinstance<py::str>(json) || py::hasattr(json, "__fspath__"))
              text = path_arg(json, "json");
            else
              throw py::type_error("json: expected a path, JSON text or a dict");
            std::map<std::string, DataShape> shapes;
            if (!datasets.is_none()) {
              if (!py::isinstance<py::dict>(datasets))
                throw py::type_error("datasets: expected a dict {dataset name: shape or data}");
              for (auto item : py::reinterpret_borrow<py::dict>(datasets)) {
                const std::string name = py::str(item.first);
                shapes[name] = data_shape(name, item.second);
              }
            }
            auto opt = model_options(backend, threads, precision);
            return std::make_unique<PyModel>(Model::from_json(text, shapes, seed, opt));
          },
          py::arg("json"), py::arg("datasets") = py::none(), py::arg("seed") = 1,
          py::arg("backend") = "cpu", py::arg("threads") = 0, py::arg("precision") = "",
          "A new network from a network JSON (a path, JSON text or a dict), initialised with "
          "`seed`. datasets: {dataset name: width, data array, or {'shape': ..., 'sparse': "
          "...}} sizes the layers whose N is 'auto'.")
      .def(
          "save",
          [](PyModel& m, const py::object& path) {
            const std::string p = path_arg(path, "path");
            py::gil_scoped_release release;
            m.model->save(p);
          },
          py::arg("path"),
          "Writes the network file (atomically), items included when the network has them.")
      .def_property_readonly("name", [](PyModel& m) { return m.model->name(); })
      .def_property_readonly("backend", [](PyModel& m) { return m.model->backend_name(); })
      .def_property_readonly("layers", [](PyModel& m) { return m.model->layers(); })
      .def(
          "layer", [](PyModel& m, const std::string& n) { return m.model->layer(n); },
          py::arg("name"), "The LayerInfo of the layer `name` (ValueError names the layers).")
      .def_property_readonly("input_layers", [](PyModel& m) { return m.model->input_layers(); })
      .def_property_readonly("output_layers", [](PyModel& m) { return m.model->output_layers(); })
      .def(
          "items",
          [](PyModel& m, const std::string& layer) -> py::object {
            const auto names = m.model->items(layer);
            if (!names) return py::none();
            return py::cast(*names);
          },
          py::arg("layer"),
          "The names of a layer's units (its items) in unit order, '' for an unnamed unit, or "
          "None when the network does not carry them (docs/retraining.md).")
      .def_property_readonly("weights", [](PyModel& m) { return m.model->weights(); })
      .def(
          "get_weights",
          [](PyModel& m, const std::string& name) {
            const WeightInfo& w = m.model->weight(name);
            std::vector<float> v = m.model->get_weights(name);
            std::vector<py::ssize_t> shape(w.shape.begin(), w.shape.end());
            py::array_t<float> a(shape);
            std::copy(v.begin(), v.end(), a.mutable_data());
            return a;
          },
          py::arg("name"), "A copy of the weight array `name` (Model.weights lists them), float32.")
      .def(
          "set_weights",
          [](PyModel& m, const std::string& name, const py::handle& values) {
            const WeightInfo& w = m.model->weight(name);
            if (!py::isinstance<py::array>(values))
              throw py::type_error("values: expected a numpy.ndarray of shape " +
                                   py::str(py::cast(w.shape)).cast<std::string>());
            py::array a = py::reinterpret_borrow<py::array>(values);
            if (!a.dtype().is(py::dtype::of<float>()))
              throw py::value_error("values: expected float32; got " +
                                    py::str(a.dtype()).cast<std::string>() +
                                    " (convert with .astype(numpy.float32))");
            std::vector<size_t> shape(a.shape(), a.shape() + a.ndim());
            if (shape != w.shape)
              throw py::value_error("values: weight '" + name + "' has shape " +
                                    py::str(py::tuple(py::cast(w.shape))).cast<std::string>() +
                                    "; got " +
                                    py::str(py::tuple(py::cast(shape))).cast<std::string>());
            auto c = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
            m.model->set_weights(name, c.data(), size_t(c.size()));
          },
          py::arg("name"), py::arg("values"),
          "Replaces the weight array `name` with `values` (float32, its shape).")
      .def(
          "evaluator",
          [](PyModel& m, uint32_t max_batch) {
            return std::make_unique<Evaluator>(m.model, max_batch);
          },
          py::arg("max_batch") = 1024, py::keep_alive<0, 1>(),
          "A new Evaluator over this model (one per thread).")
      .def(
          "predict",
          [](PyModel& m, const py::handle& x, const py::object& k, const py::object& exclude,
             const py::object& layer) {
            std::unique_ptr<Evaluator> ev = m.take();
            py::object r = predict(*ev, x, k, exclude, layer);
            m.give(std::move(ev));
            return r;
          },
          py::arg("x"), py::arg("k") = 10, py::arg("exclude") = py::none(),
          py::arg("layer") = py::none(), kPredictDoc)
      .def(
          "outputs",
          [](PyModel& m, const py::handle& x, const py::object& layer) {
            std::unique_ptr<Evaluator> ev = m.take();
            py::array_t<float> r = outputs(*ev, x, layer);
            m.give(std::move(ev));
            return r;
          },
          py::arg("x"), py::arg("layer") = py::none(), kOutputsDoc);

  py::class_<Trainer>(m, "Trainer")
      .def(py::init([](PyModel& model, const py::dict& data, uint32_t epochs, uint32_t minibatch,
                       const std::string& optimizer, float alpha, float lambda_, float lambda1,
                       float mu, float mu1, uint64_t seed, const py::object& shuffle,
                       const std::string& checkpoint_name, int checkpoint_interval,
                       const py::object& log, bool profile, const std::string& trace,
                       uint32_t trace_steps, const std::string& sparse_update,
                       const std::string& tensorboard, uint32_t tensorboard_interval,
                       const py::object& warm_start, int alpha_interval, float alpha_multiplier) {
             std::vector<Dataset> sets;
             for (auto item : data) {
               if (!py::isinstance<py::str>(item.first))
                 throw py::type_error("data: keys are dataset names (str)");
               const std::string name = py::str(item.first);
               sets.push_back(to_dataset(name, item.second));
             }
             TrainSettings s;
             s.epochs = epochs;
             s.minibatch = minibatch;
             s.optimizer = optimizer;
             s.alpha = alpha;
             s.lambda = lambda_;
             s.lambda1 = lambda1;
             s.mu = mu;
             s.mu1 = mu1;
             s.seed = seed;
             if (!shuffle.is_none()) s.shuffle = shuffle.cast<bool>();
             s.checkpoint_name = checkpoint_name;
             s.checkpoint_interval = checkpoint_interval;
             s.log = CallbackBridge{}.log_fn(log);
             s.profile = profile;
             s.trace = trace;
             s.trace_steps = trace_steps;
             s.sparse_update = sparse_update;
             s.tensorboard = tensorboard;
             s.tensorboard_interval = tensorboard_interval;
             if (!warm_start.is_none()) s.warm_start = path_arg(warm_start, "warm_start");
             if (alpha_interval < 0) throw py::value_error("alpha_interval: expected >= 0");
             if (!(alpha_multiplier > 0)) throw py::value_error("alpha_multiplier: expected > 0");
             s.alpha_interval = alpha_interval;
             s.alpha_multiplier = alpha_multiplier;
             return std::make_unique<Trainer>(model.model, std::move(sets), s);
           }),
           py::arg("model"), py::arg("data"), py::arg("epochs") = 1, py::arg("minibatch") = 1024,
           py::arg("optimizer") = "SGD", py::arg("alpha") = 0.1f, py::arg("lambda_") = 0.001f,
           py::arg("lambda1") = 0.0f, py::arg("mu") = 0.9f, py::arg("mu1") = 0.999f,
           py::arg("seed") = 1, py::arg("shuffle") = py::none(), py::arg("checkpoint_name") = "",
           py::arg("checkpoint_interval") = 0, py::arg("log") = py::none(),
           py::arg("profile") = false, py::arg("trace") = "", py::arg("trace_steps") = 20,
           py::arg("sparse_update") = "Exact", py::arg("tensorboard") = "",
           py::arg("tensorboard_interval") = 0, py::arg("warm_start") = py::none(),
           py::arg("alpha_interval") = 0, py::arg("alpha_multiplier") = 0.5f,
           py::keep_alive<1, 2>())
      .def(
          "run",
          [](Trainer& t, const py::object& callback) {
            return run_training([&t](const EpochCallback& cb) { return t.run(cb); }, callback);
          },
          py::arg("callback") = py::none())
      .def_property_readonly("epoch", &Trainer::epoch);

  m.def(
      "train",
      [](const py::object& cdl, const py::object& callback, const std::string& backend, int threads,
         const py::object& log, const py::object& resume) {
        const std::string path = path_arg(cdl, "cdl");
        auto opt = model_options(backend, threads, "");  // the CDL names its precision
        std::optional<bool> resume_run;
        if (!resume.is_none()) {
          if (!py::isinstance<py::bool_>(resume))
            throw py::type_error("resume: expected True, False or None (the file's Resume key)");
          resume_run = resume.cast<bool>();
        }
        std::shared_ptr<Model> model;
        auto log_fn = CallbackBridge{}.log_fn(log);
        run_training(
            [&](const EpochCallback& cb) {
              model = train_cdl(path, cb, opt, log_fn, resume_run);
              return std::vector<EpochStats>{};
            },
            callback);
        return std::make_unique<PyModel>(model);
      },
      py::arg("cdl"), py::arg("callback") = py::none(), py::arg("backend") = "cpu",
      py::arg("threads") = 0, py::arg("log") = py::none(), py::arg("resume") = py::none(),
      "Runs a CDL Train command file as nn-train does (its checkpoints, Results file, validation\n"
      "and early stopping); returns the trained Model. callback(stats dict) after each epoch\n"
      "returns False to stop. log(line) gets nn-train's progress lines. resume=True continues\n"
      "from the newest checkpoint that reads back, as nn-train --resume (None: the file's\n"
      "Resume key, by default never).");

  m.def(
      "predict",
      [](const py::object& cdl, const std::string& backend, int threads, const py::object& log) {
        const std::string path = path_arg(cdl, "cdl");
        const CommandFile file = CommandFile::read(path);
        if (file.command() != "Predict")
          throw nn::ConfigError(path + ": Command is " + file.command() +
                                "; predict runs Predict commands");
        PredictJob job = predict_job(file);
        job.backend = backend;
        job.threads = threads;
        auto log_fn = CallbackBridge{}.log_fn(log);
        PredictResult r;
        {
          py::gil_scoped_release release;
          r = run_prediction(job, log_fn ? nn::LogSink(log_fn) : nn::null_log());
        }
        py::dict out;
        out["examples"] = r.examples;
        out["layer"] = r.layer;
        out["k"] = r.k;
        if (r.classified) {
          out["top1"] = r.top1;
          out["topk"] = r.topk;
        } else if (!r.precision.empty()) {
          out["evaluated"] = r.evaluated;
          out["precision"] = r.precision;
          out["recall"] = r.recall;
          out["ndcg"] = r.ndcg;
        }
        return out;
      },
      py::arg("cdl"), py::arg("backend") = "cpu", py::arg("threads") = 0,
      py::arg("log") = py::none(),
      "Runs a CDL Predict command file as nn-predict does (its Output file, filter and Target); "
      "returns {examples, layer, k} and the metrics against the Target.");

  m.def(
      "read_datasets",
      [](const py::object& path) {
        const std::string p = path_arg(path, "path");
        std::vector<Dataset> sets;
        {
          py::gil_scoped_release release;
          sets = Dataset::read_netcdf(p);
        }
        py::dict out;
        for (const Dataset& d : sets) out[py::str(d.name())] = dataset_to_python(d);
        return out;
      },
      py::arg("path"),
      "The datasets of a NetCDF dataset file: {name: numpy array or scipy.sparse.csr_matrix}.");

  nnpy::bind_generate(m);
}
