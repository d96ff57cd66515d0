// Evaluators on several threads over one Model whose backend must not be shared between threads
// (as CUDA's: one stream, staging and scratch per backend): each evaluator runs on a peer of its
// own (Backend::make_peer), so no two threads are ever inside one backend, and every thread gets
// the answers a single evaluator gives. The probe (test::CountingBackend's ThreadProbe) notes
// threads meeting inside a backend; the control run, with peers withheld, shows that it does.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/model_impl.h"
#include "backend/counting_backend.h"
#include "nn/nn.h"

namespace nn::api {
namespace {

constexpr uint32_t kIn = 64, kOut = 300, kRows = 40, kK = 5, kThreads = 4, kRounds = 6;

const char* kNet = R"({ "Name": "threads", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] })";

struct Batch {
  std::vector<uint64_t> row_ptr{0};
  std::vector<uint32_t> index;
  CsrInput input() const { return {row_ptr.data(), index.data(), nullptr, kRows, kIn}; }
};

Batch make_batch(uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t j = 0; j < kIn; ++j)
      if (rng() % 5 == 0) b.index.push_back(j);
    b.row_ptr.push_back(b.index.size());
  }
  return b;
}

// The model of kNet with the weights of a CPU model, on a probed CountingBackend.
std::shared_ptr<Model> probed_model(const std::shared_ptr<test::CountingBackend::ThreadProbe>& p) {
  auto cpu =
      Model::from_json(kNet, {{"input", {kIn, 1, 1, true}}, {"output", {kOut}}}, 7, {"cpu", 1});
  const NetworkFile file = cpu->impl().net->to_file();
  auto backend = std::make_unique<test::CountingBackend>(true, 1);
  backend->probe = p;
  return Model::Impl::create(std::move(backend), cpu->impl().net->spec(), cpu->impl().sparse_inputs,
                             &file, 7);
}

struct TopK {
  std::vector<uint32_t> index = std::vector<uint32_t>(size_t(kRows) * kK);
  std::vector<float> score = std::vector<float>(size_t(kRows) * kK);
};

// kThreads threads, each with its own Evaluator over `model`, each running kRounds top-K
// passes over the batches; results[t][round].
std::vector<std::vector<TopK>> run_threads(const std::shared_ptr<Model>& model,
                                           const std::vector<Batch>& batches) {
  std::vector<std::vector<TopK>> results(kThreads, std::vector<TopK>(kRounds));
  std::vector<std::unique_ptr<Evaluator>> evaluators;
  for (uint32_t t = 0; t < kThreads; ++t) evaluators.push_back(std::make_unique<Evaluator>(model));
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint32_t r = 0; r < kRounds; ++r) {
        TopK& out = results[t][r];
        evaluators[t]->top_k(batches[(t + r) % batches.size()].input(), kK, "", nullptr,
                             out.index.data(), out.score.data());
      }
    });
  for (std::thread& th : threads) th.join();
  return results;
}

// The answers one evaluator gives, alone.
std::vector<TopK> answers_alone(const std::shared_ptr<Model>& model,
                                const std::vector<Batch>& batches) {
  std::vector<TopK> alone(batches.size());
  Evaluator ev(model);
  for (size_t b = 0; b < batches.size(); ++b)
    ev.top_k(batches[b].input(), kK, "", nullptr, alone[b].index.data(), alone[b].score.data());
  return alone;
}

// Every thread's every round answered as one evaluator alone answers its batch.
void expect_answers_of_one_evaluator(const std::vector<std::vector<TopK>>& results,
                                     const std::vector<TopK>& alone, size_t batches) {
  for (uint32_t t = 0; t < kThreads; ++t)
    for (uint32_t r = 0; r < kRounds; ++r) {
      const TopK& want = alone[(t + r) % batches];
      EXPECT_EQ(results[t][r].index, want.index) << "thread " << t << " round " << r;
      EXPECT_EQ(results[t][r].score, want.score) << "thread " << t << " round " << r;
    }
}

TEST(EvaluatorThreads, EachEvaluatorRunsOnAPeerWhereTheBackendCannotBeShared) {
  const std::vector<Batch> batches = {make_batch(1), make_batch(2), make_batch(3)};
  auto probe = std::make_shared<test::CountingBackend::ThreadProbe>();
  auto model = probed_model(probe);
  const std::vector<TopK> alone = answers_alone(model, batches);
  probe->overlaps = 0;
  probe->peers = 0;
  const auto results = run_threads(model, batches);
  EXPECT_EQ(probe->peers.load(), int(kThreads));
  EXPECT_EQ(probe->overlaps.load(), 0) << "two threads were inside one backend at once";
  expect_answers_of_one_evaluator(results, alone, batches.size());
}

TEST(EvaluatorThreads, TheProbeSeesThreadsThatShareABackend) {
  // The control: with no peers handed out, the evaluators share the model's backend and the
  // probe must see them meet (else the test above proves nothing).
  const std::vector<Batch> batches = {make_batch(4), make_batch(5)};
  auto probe = std::make_shared<test::CountingBackend::ThreadProbe>();
  probe->give_peers = false;
  auto model = probed_model(probe);
  run_threads(model, batches);
  EXPECT_EQ(probe->peers.load(), 0);
  EXPECT_GT(probe->overlaps.load(), 0);
}

TEST(EvaluatorThreads, OnCudaWithoutPeersTheEvaluatorsTakeTurns) {
  // CUDA without peer backends (NN_CUDA_PEER_BACKENDS=0; on by default since the H200 run of
  // 2026-12-04, backend/cuda_paths.h): the evaluators share the model's backend one at a time, with
  // the answers of one evaluator alone.
  const std::vector<Batch> batches = {make_batch(6), make_batch(7)};
  auto probe = std::make_shared<test::CountingBackend::ThreadProbe>();
  probe->give_peers = false;
  probe->shareable = false;
  auto model = probed_model(probe);
  const std::vector<TopK> alone = answers_alone(model, batches);
  const auto results = run_threads(model, batches);
  EXPECT_EQ(probe->peers.load(), 0);
  EXPECT_EQ(probe->overlaps.load(), 0) << "two threads were inside one backend at once";
  expect_answers_of_one_evaluator(results, alone, batches.size());
}

}  // namespace
}  // namespace nn::api
