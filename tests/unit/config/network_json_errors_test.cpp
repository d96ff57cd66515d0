// JSON network descriptions that must be rejected, with messages that say where (file, JSON path),
// what was found and what was expected.
#include <gtest/gtest.h>

#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

std::string error_for(const std::string& text) {
  return error_of([&] { parse_network_json(text, "net.json"); });
}

TEST(NetworkJsonErrors, UnknownLayerKeyNamesPathAndValidKeys) {
  const std::string m = error_for(R"({"Layers": [{"N": 2}, {"N": 2},
      {"N": 2, "Activtion": "Tanh"}]})");
  EXPECT_CONTAINS(m,
                  "net.json: Layers[2].Activtion: unknown key; expected one of Kind, Type, Name");
  EXPECT_CONTAINS(m, "Activation");
  EXPECT_CONTAINS(m, "did you mean Activation?");
  // Output layers take no hidden-only keys, so those are not offered.
  EXPECT_EQ(m.find("BatchNormalization"), std::string::npos) << m;
}

TEST(NetworkJsonErrors, UnknownTopLevelKey) {
  const std::string m = error_for(R"({"L1Penalty": 0.1, "Layers": [{"N": 2}, {"N": 2}]})");
  EXPECT_CONTAINS(m, "net.json: L1Penalty: unknown key; expected one of Version, Name, Kind");
  EXPECT_CONTAINS(m, "Layers");
}

TEST(NetworkJsonErrors, UnknownKeysInNestedObjects) {
  EXPECT_CONTAINS(
      error_for(R"({"Layers": [{"N": 2}, {"N": 2, "WeightInit": {"Sceme": "Xavier"}}]})"),
      "net.json: Layers[1].WeightInit.Sceme: unknown key; expected one of Scheme, "
      "Scale, Bias (did you mean Scheme?)");
  EXPECT_CONTAINS(error_for(R"({"LRN": {"size": 3}, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "net.json: LRN.size: unknown key; expected one of k, n, alpha, beta");
  EXPECT_CONTAINS(error_for(R"({"DeltaBoost": {"two": 3}, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "DeltaBoost.two: unknown key; expected one of one, zero");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2},
          {"N": 2, "SharedWeights": [{"InputLayer": "Hidden1", "Transpose": true}]}]})"),
                  "net.json: Layers[2].SharedWeights[0].Transpose: unknown key; expected one of "
                  "SourceInputLayer, SourceOutputLayer, InputLayer, Transposed");
  EXPECT_CONTAINS(error_for(R"({"Denoising": {"q": 0.1}, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "Denoising.q: unknown key; expected one of p");
}

TEST(NetworkJsonErrors, WrongTypeOfN) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": true}]})"),
                  "net.json: Layers[1].N: expected an integer, an array of 1-4 integers or "
                  "\"auto\", got true");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": "big"}, {"N": 2}]})"),
                  "Layers[0].N: expected an integer, an array of 1-4 integers or \"auto\", got "
                  "\"big\"");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": [1, 2, 3, 4, 5]}, {"N": 2}]})"),
                  "Layers[0].N: expected an integer, an array of 1-4 integers or \"auto\", got an "
                  "array of 5 elements");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": [3, 2.5]}, {"N": 2}]})"),
                  "Layers[0].N[1]: expected an integer, got 2.5");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 0}, {"N": 2}]})"),
                  "Layers[0].N: must be between 1 and 4294967295, got 0");
}

TEST(NetworkJsonErrors, WrongScalarTypes) {
  EXPECT_CONTAINS(error_for(R"({"ShuffleIndices": "yes", "Layers": [{"N": 2}, {"N": 2}]})"),
                  "net.json: ShuffleIndices: expected true or false, got \"yes\"");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "pDropout": "0.5"}]})"),
                  "Layers[1].pDropout: expected a number, got \"0.5\"");
  EXPECT_CONTAINS(error_for(R"({"Name": 3, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "net.json: Name: expected a string, got 3");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Source": 7}]})"),
                  "Layers[1].Source: expected a string or a non-empty array of strings, got 7");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Source": []}]})"),
                  "Layers[1].Source: expected a string or a non-empty array of strings, got an "
                  "array");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "WeightInit": "Xavier"}]})"),
                  "Layers[1].WeightInit: expected an object, got \"Xavier\"");
  EXPECT_CONTAINS(error_for(R"({"Layers": 5})"),
                  "net.json: Layers: expected a non-empty array of layer objects, got 5");
  EXPECT_CONTAINS(error_for(R"([1, 2])"),
                  "net.json: (top level): expected an object, got an array");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, 3]})"),
                  "net.json: Layers[1]: expected an object, got 3");
}

TEST(NetworkJsonErrors, UnknownEnumValuesListTheChoices) {
  const std::string m = error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Activation": "Relux"}]})");
  EXPECT_CONTAINS(m,
                  "net.json: Layers[1].Activation: unknown \"Relux\"; expected one of Sigmoid, "
                  "Tanh, Linear, RectifiedLinear (ReLU), LeakyRectifiedLinear (LReLU)");
  EXPECT_CONTAINS(m, "SoftMax");
  EXPECT_CONTAINS(error_for(R"({"ErrorFunction": "MSE", "Layers": [{"N": 2}, {"N": 2}]})"),
                  "ErrorFunction: unknown \"MSE\"; expected one of L1, L2, L2Hinge, Hinge, "
                  "CrossEntropy (Cross Entropy)");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Activation": "PRelu"}]})"),
                  "unknown \"PRelu\"");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Kind": "Visible"}]})"),
                  "Layers[1].Kind: unknown \"Visible\"; expected one of Input, Hidden, Output, "
                  "Target");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Pooling",
                               "Function": "Stochastic"}]})"),
                  "Layers[1].Function: unknown \"Stochastic\"; expected one of Max, Average, LRN");
  // DSSTNE's parser rejects these pooling functions too (Maxout, DotProduct and Cosine are
  // implemented: see tests/unit/layers/pooling_functions_test.cpp).
  for (const char* f : {"LCN", "LocalContrastNormalization", "GlobalTemporal"})
    EXPECT_CONTAINS(error_for(std::string(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Pooling",
                               "Function": ")") +
                              f + R"("}]})"),
                    std::string("Layers[1].Function: unknown \"") + f +
                        "\"; expected one of Max, Average, LRN (LocalResponseNormalization), "
                        "Maxout, DotProduct, Cosine");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2,
                               "WeightInit": {"Scheme": "He"}}]})"),
                  "Layers[1].WeightInit.Scheme: unknown \"He\"; expected one of Xavier");
  EXPECT_CONTAINS(error_for(R"({"Kind": "Recurrent", "Layers": [{"N": 2}, {"N": 2}]})"),
                  "Kind: unknown \"Recurrent\"; expected one of FeedForward, AutoEncoder");
}

TEST(NetworkJsonErrors, MissingSourceLayerNamesLayerAndMissingName) {
  const std::string m = error_for(R"({"Layers": [{"Name": "in", "N": 2},
      {"Name": "h", "N": 2, "Source": "inn"}, {"N": 2}]})");
  EXPECT_CONTAINS(m, "net.json: Layers[1].Source: layer \"h\" names unknown source layer \"inn\"");
  EXPECT_CONTAINS(m, "layers are in, h, Output2");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "in", "N": 2},
      {"Name": "out", "N": 2, "Skip": ["in", "nope"]}]})"),
                  "Layers[1].Skip: layer \"out\" names unknown skip layer \"nope\"");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "in", "N": 2}, {"Name": "out", "N": 2,
      "SharedWeights": {"SourceInputLayer": "in", "SourceOutputLayer": "x",
                        "InputLayer": "in"}}]})"),
                  "Layers[1].SharedWeights: layer \"out\" names unknown layer \"x\"");
}

TEST(NetworkJsonErrors, SharedWeightsArrayEntriesAreNamedByIndex) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "in", "N": 2}, {"Name": "out", "N": 2,
      "SharedWeights": [{"SourceInputLayer": "in", "SourceOutputLayer": "x",
                         "InputLayer": "in"}]}]})"),
                  "net.json: Layers[1].SharedWeights[0]: layer \"out\" names unknown layer \"x\"");
}

TEST(NetworkJsonErrors, SharedWeightsMustMatchASourceAndARealWeight) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "in", "N": 4}, {"Name": "h", "N": 2},
      {"Name": "out", "N": 4, "SharedWeights": {"SourceInputLayer": "in",
       "SourceOutputLayer": "h", "InputLayer": "in"}}]})"),
                  "Layers[2].SharedWeights.InputLayer: \"in\" is not a source of layer \"out\" "
                  "(its sources are h)");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "in", "N": 4}, {"Name": "h", "N": 2},
      {"Name": "out", "N": 4, "SharedWeights": {"SourceInputLayer": "h",
       "SourceOutputLayer": "in", "InputLayer": "h", "Transposed": true}}]})"),
                  "Layers[2].SharedWeights: there is no weight from \"h\" to \"in\" to share");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "in", "N": 4},
      {"Name": "out", "N": 4, "SharedWeights": {"InputLayer": "in"}}]})"),
                  "Layers[1].SharedWeights.SourceInputLayer: missing; a layer name is required");
}

TEST(NetworkJsonErrors, DuplicateLayerNames) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "a", "N": 2}, {"Name": "b", "N": 2},
      {"Name": "a", "N": 2}]})"),
                  "net.json: Layers[2].Name: duplicate layer name \"a\" (also the name of "
                  "Layers[0])");
  // An explicit name may not take a default name either.
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"Name": "Input0", "N": 2}]})"),
                  "duplicate layer name \"Input0\"");
}

TEST(NetworkJsonErrors, DuplicateKeysIgnoringCase) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2, "n": 3}, {"N": 2}]})"),
                  "net.json: Layers[0].n: key given twice (as \"N\" and \"n\"");
  EXPECT_CONTAINS(error_for(R"({"Name": "a", "Name": "b", "Layers": [{"N": 2}, {"N": 2}]})"),
                  "net.json: Name: key given twice");
  EXPECT_CONTAINS(error_for(R"({"RELUSlope": 0.1, "Slope": 0.2, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "net.json: Slope: given twice (RELUSlope and an alias of it)");
}

TEST(NetworkJsonErrors, JsonSyntaxErrorReportsLineAndColumn) {
  const std::string m = error_for("{\n  \"Layers\": [\n    {\"N\": 2},\n    {\"N\" 2}\n  ]\n}\n");
  // Column 10 is the "2" where the ':' should be.
  EXPECT_CONTAINS(m, "net.json: line 4, column 10: invalid JSON: ");
  EXPECT_CONTAINS(m, "expected ':'");
  // Unexpected end of input: one past the last character.
  EXPECT_CONTAINS(error_for("{\"Layers\": [{\"N\": 2}, {\"N\": 2}]"),
                  "net.json: line 1, column 32: invalid JSON");
  EXPECT_CONTAINS(error_for(""), "net.json: line 1, column 1: invalid JSON");
}

TEST(NetworkJsonErrors, MissingFileIsAnIoErrorNamingTheFile) {
  test::ScratchDir dir;
  const std::string path = dir.path() + "/missing.json";
  const std::string m = error_of<IoError>([&] { load_network_json(path); });
  EXPECT_CONTAINS(m, path + ": cannot open network JSON file: No such file or directory");
}

TEST(NetworkJsonErrors, SyntaxErrorInLoadedFileNamesTheFile) {
  test::ScratchDir dir;
  const std::string path = dir.write("bad.json", "{\"Layers\": [}");
  EXPECT_CONTAINS(error_of([&] { load_network_json(path); }), path + ": line 1, column 13");
}

TEST(NetworkJsonErrors, AutoNeedsDataSetAndIsNotForHiddenLayers) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": "auto"}, {"N": 2}]})"),
                  "net.json: Layers[0].N: \"auto\" takes the size from the layer's DataSet, but "
                  "the layer has no DataSet");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "DataSet": "x"}, {"N": 2}]})"),
                  "Layers[1].DataSet: not valid on a Hidden layer; only on Input and Output "
                  "layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": "auto"}, {"N": 2}]})"),
                  "Layers[1].N: \"auto\" is not allowed on Hidden layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2}, {"Kind": "Target", "N": "auto"}]})"),
                  "Layers[2].N: \"auto\" is not allowed on Target layers");
}

TEST(NetworkJsonErrors, KeysNotValidForTheLayerKindOrType) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2, "Source": "x"}, {"N": 2}]})"),
                  "net.json: Layers[0].Source: not valid on an Input layer; only on Hidden, "
                  "Output and Target layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2, "Activation": "Tanh"}, {"N": 2}]})"),
                  "Layers[0].Activation: not valid on an Input layer; only on Hidden and Output "
                  "layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "BatchNormalization": true}]})"),
                  "Layers[1].BatchNormalization: not valid on an Output layer; only on Hidden "
                  "layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Kernel": 3}]})"),
                  "Layers[1].Kernel: only valid on Convolutional and Pooling layers, but this "
                  "layer's Type is FullyConnected");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Convolutional",
                               "Function": "Max"}]})"),
                  "Layers[1].Function: only valid on Pooling layers");
}

TEST(NetworkJsonErrors, MultVaeKeysWhereTheyDoNotBelong) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Normalize": "L2"}]})"),
                  "Layers[1].Normalize: not valid on an Output layer; only on Input layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2, "Normalize": "L1"}, {"N": 2}]})"),
                  "Layers[0].Normalize");
  EXPECT_CONTAINS(error_for(R"({"SoftMaxTargets": "Scaled", "Layers": [{"N": 2}, {"N": 2}]})"),
                  "SoftMaxTargets");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Kind": "Hidden",
                               "KL": {"Beta": 1}}, {"N": 2}]})"),
                  "Layers[1].KL: only valid on Variational layers");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Kind": "Output",
                               "Type": "Variational"}]})"),
                  "Variational layers are Hidden layers, but this one is an Output layer");
  for (const char* key : {R"("pDropout": 0.5)", R"("BatchNormalization": true)",
                          R"("Skip": ["in"])", R"("DeltaNorm": 1)"})
    EXPECT_CONTAINS(error_for(std::string(R"({"Layers": [{"Name": "in", "N": 2},
        {"N": 2, "Type": "Variational", )") +
                              key + R"(}, {"N": 2}]})"),
                    "not valid on a Variational layer")
        << key;
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Variational",
                               "Activation": "Tanh"}, {"N": 2}]})"),
                  "a Variational layer outputs its sample as it is (Linear), not Tanh");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Variational",
                               "KL": {"Beta": -1}}, {"N": 2}]})"),
                  "Layers[1].KL.Beta");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Variational",
                               "KL": {"Cap": 1}}, {"N": 2}]})"),
                  "KL.Cap: unknown key; expected one of Beta, AnnealSteps");
}

TEST(NetworkJsonErrors, StructuralProblems) {
  EXPECT_CONTAINS(error_for(R"({"Name": "x"})"), "net.json: Layers: missing");
  EXPECT_CONTAINS(error_for(R"({"Layers": []})"),
                  "Layers: expected a non-empty array of layer objects, got an array");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Kind": "Hidden"}]})"),
                  "net.json: Layers: the network has no Output layer");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2, "Kind": "Hidden"}, {"N": 2}]})"),
                  "net.json: Layers[0]: a Hidden layer needs a Source, and there is no previous "
                  "layer");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "i", "N": 2},
      {"Name": "a", "N": 2, "Kind": "Hidden", "Source": "b"},
      {"Name": "b", "N": 2, "Kind": "Hidden", "Source": "a"}, {"N": 2}]})"),
                  "the layers form a cycle: a <- b <- a");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "i", "N": 2},
      {"Name": "o", "N": 2, "Source": ["i", "o"]}]})"),
                  "Layers[1].Source: layer \"o\" names itself");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "i", "N": 2},
      {"Name": "o", "N": 2, "Source": ["i", "i"]}]})"),
                  "layer \"o\" lists \"i\" twice");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Pooling",
                               "Function": "DotProduct"}]})"),
                  "Layers[1].Source: a DotProduct pooling layer needs at least 2 sources, got 1");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "a", "N": 2}, {"Name": "b", "N": 2},
                               {"N": 2, "Type": "Pooling", "Function": "Cosine", "Source": "a"}]})"),
                  "net.json: Layers[2].Source: a Cosine pooling layer needs at least 2 sources, "
                  "got 1");
}

TEST(NetworkJsonErrors, PoolingLayerNeedsAFunction) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": [4, 4]}, {"Type": "Pooling", "Kernel": 2},
                               {"N": 2}]})"),
                  "net.json: Layers[1]: a Pooling layer needs a Function; expected one of Max, "
                  "Average, LRN (LocalResponseNormalization), Maxout, DotProduct, Cosine");
}

TEST(NetworkJsonErrors, OutOfRangeValues) {
  EXPECT_CONTAINS(error_for(R"({"Version": 0.6, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "net.json: Version: must be >= 0.7, got 0.6");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2, "pDropout": 1.5}, {"N": 2}]})"),
                  "Layers[0].pDropout: must be in [0, 1), got 1.5");
  EXPECT_CONTAINS(error_for(R"({"Denoising": {"p": -0.1}, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "Denoising.p: must be in [0, 1), got -0.1");
  EXPECT_CONTAINS(error_for(R"({"LRN": {"n": 0}, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "LRN.n: must be between 1 and 2147483647, got 0");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "WeightNorm": -1}]})"),
                  "Layers[1].WeightNorm: must be >= 0 (0 disables it), got -1");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Kernel": [1, 2, 3, 4]}]})"),
                  "Layers[1].Kernel: only valid on Convolutional");
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"N": 2}, {"N": 2, "Type": "Pooling",
                               "Kernel": [1, 2, 3, 4]}]})"),
                  "Layers[1].Kernel: expected an integer or an array of 1-3 integers, got an "
                  "array");
  EXPECT_CONTAINS(error_for(R"({"Decay": 1e300, "Layers": [{"N": 2}, {"N": 2}]})"),
                  "Decay: number out of the range of a 32-bit float, got 1e+300");
}

TEST(NetworkJsonErrors, EmptyLayerNameIsRejected) {
  EXPECT_CONTAINS(error_for(R"({"Layers": [{"Name": "", "N": 2}, {"N": 2}]})"),
                  "Layers[0].Name: layer names must not be empty");
}

TEST(NetworkJsonErrors, UnnamedSourceUsesPlaceholderInMessages) {
  EXPECT_CONTAINS(error_of([] { parse_network_json("{}", ""); }),
                  "<network JSON>: Layers: missing");
}

}  // namespace
}  // namespace nn
