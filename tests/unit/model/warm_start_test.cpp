// Warm starts matched by item name (model/warm_start.h): kept items keep their rows, columns and
// biases wherever they moved, new items keep the new network's initial values, items that left
// are dropped, hidden layers are copied, and a hidden layer that changed shape is an error naming
// it and both shapes.
#include "model/warm_start.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace nn {
namespace {

using Names = std::vector<std::string>;

LayerSpec layer(const std::string& name, LayerKind kind, uint32_t units, const Names* names) {
  LayerSpec l;
  l.name = name;
  l.kind = kind;
  l.n = {units, 1, 1, 1};
  l.sparse = kind == LayerKind::Input;
  if (names) l.features = make_feature_names(*names);
  return l;
}

WeightArrays weight(const std::string& in, const std::string& out, uint64_t height, uint64_t width,
                    float base) {
  WeightArrays w;
  w.input_layer = in;
  w.output_layer = out;
  w.height = height;
  w.width = width;
  for (uint64_t i = 0; i < height * width; ++i) w.weights.push_back(base + float(i));
  for (uint64_t c = 0; c < width; ++c) w.bias.push_back(base + 100.0f + float(c));
  return w;
}

// Input(items) -> Hidden(hidden units) -> Output(items), every value from `base` up.
NetworkFile autoencoder(const Names& items, uint32_t units, uint32_t hidden, float base,
                        bool named = true) {
  NetworkFile f;
  f.spec.layers = {layer("Input", LayerKind::Input, units, named ? &items : nullptr),
                   layer("Hidden", LayerKind::Hidden, hidden, nullptr),
                   layer("Output", LayerKind::Output, units, named ? &items : nullptr)};
  f.weights = {weight("Input", "Hidden", units, hidden, base),
               weight("Hidden", "Output", hidden, units, base + 1000.0f)};
  return f;
}

TEST(WarmStart, KeptItemsMoveAddedStayDroppedGo) {
  // Yesterday: a, b, c. Today: c, d (new), a, and padding; b left.
  const NetworkFile old = autoencoder({"a", "b", "c"}, 3, 2, 0.0f);
  const NetworkFile fresh = autoencoder({"c", "d", "a", ""}, 4, 2, -50.0f);
  const WarmStartResult r = warm_start(fresh, old, "old.nc");
  const WeightArrays& in = r.arrays.weights[0];  // [item][hidden]
  // Row "c" (new 0) is old row 2; row "d" keeps its fresh values; "a" (new 2) is old row 0.
  EXPECT_EQ(in.weights, (std::vector<float>{4, 5, -48, -47, 0, 1, -44, -43}));
  EXPECT_EQ(in.bias, old.weights[0].bias);        // the hidden layer's biases are copied
  const WeightArrays& out = r.arrays.weights[1];  // [hidden][item]
  // Columns follow the items: new column 0 = old 2, 1 fresh, 2 = old 0, 3 fresh.
  EXPECT_EQ(out.weights, (std::vector<float>{1002, 950 + 1, 1000, 950 + 3,  //
                                             1005, 950 + 5, 1003, 950 + 7}));
  EXPECT_EQ(out.bias, (std::vector<float>{1102, 1050 + 1, 1100, 1050 + 3}));
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0], "layer 'Input': 2 items kept, 1 added, 1 dropped (3 -> 4 units)");
  EXPECT_EQ(r.lines[1], "layer 'Output': 2 items kept, 1 added, 1 dropped (3 -> 4 units)");
}

TEST(WarmStart, SameItemsCopyEverything) {
  const NetworkFile old = autoencoder({"a", "b"}, 2, 3, 0.0f);
  const NetworkFile fresh = autoencoder({"a", "b"}, 2, 3, -50.0f);
  const WarmStartResult r = warm_start(fresh, old, "old.nc");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.arrays.weights[i].weights, old.weights[i].weights);
    EXPECT_EQ(r.arrays.weights[i].bias, old.weights[i].bias);
  }
}

TEST(WarmStart, HiddenLayerOfAnotherShapeIsNamed) {
  const NetworkFile old = autoencoder({"a", "b"}, 2, 3, 0.0f);
  const NetworkFile fresh = autoencoder({"a", "b"}, 2, 5, 0.0f);
  try {
    warm_start(fresh, old, "old.nc");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(),
                 "--warm-start old.nc: layer 'Hidden': is 3 in the old network and 5 in the new; "
                 "only the item layers (Input and Output) may change size");
  }
}

TEST(WarmStart, UnnamedItemsThatChangedSizeCannotBeMatched) {
  const NetworkFile old = autoencoder({"a", "b"}, 2, 3, 0.0f, /*named=*/false);
  const NetworkFile fresh = autoencoder({"a", "b", "c"}, 3, 3, 0.0f);
  try {
    warm_start(fresh, old, "old.nc");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'Input': has 2 units in the old network and 3 in "
                                         "the new, and the old network does not name the items"),
              std::string::npos)
        << e.what();
  }
}

TEST(WarmStart, UnnamedItemsOfTheSameSizeAreCopiedByPosition) {
  const NetworkFile old = autoencoder({"a", "b"}, 2, 3, 0.0f, /*named=*/false);
  const NetworkFile fresh = autoencoder({"a", "b"}, 2, 3, -50.0f);
  const WarmStartResult r = warm_start(fresh, old, "old.nc");
  EXPECT_EQ(r.arrays.weights[0].weights, old.weights[0].weights);
  ASSERT_FALSE(r.lines.empty());
  EXPECT_EQ(r.lines[0],
            "layer 'Input': 2 units copied by position (only one side names its items)");
}

TEST(WarmStart, OptimizerStateFollowsTheItemsWhenCarried) {
  NetworkFile old = autoencoder({"a", "b", "c"}, 3, 2, 0.0f);
  old.weights[0].weight_state = {std::vector<float>{10, 11, 12, 13, 14, 15}};
  old.weights[1].bias_state = {std::vector<float>{20, 21, 22}};
  const NetworkFile fresh = autoencoder({"c", "d", "a", ""}, 4, 2, -50.0f);
  const WarmStartResult carried = warm_start(fresh, old, "old.nc", /*carry_optimizer_state=*/true);
  // Rows "c", "d" (new: 0), "a", padding (0).
  ASSERT_EQ(carried.arrays.weights[0].weight_state.size(), 1u);
  EXPECT_EQ(carried.arrays.weights[0].weight_state[0],
            (std::vector<float>{14, 15, 0, 0, 10, 11, 0, 0}));
  ASSERT_EQ(carried.arrays.weights[1].bias_state.size(), 1u);
  EXPECT_EQ(carried.arrays.weights[1].bias_state[0], (std::vector<float>{22, 0, 20, 0}));
  const WarmStartResult afresh = warm_start(fresh, old, "old.nc", /*carry_optimizer_state=*/false);
  EXPECT_TRUE(afresh.arrays.weights[0].weight_state.empty());
  EXPECT_TRUE(afresh.arrays.weights[1].bias_state.empty());
}

}  // namespace
}  // namespace nn
