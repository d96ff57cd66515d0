// The CDL keys of the validation set (our extension): ValidationData (one file or an array,
// resolved against the CDL file's directory), ValidationInterval, ValidationK, Patience and
// KeepBest, with their defaults and range checks.
#include <gtest/gtest.h>

#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

CdlSpec train_with(const std::string& params, const std::string& source = "run.cdl") {
  return parse_cdl(R"({"Network": "net.json", "Command": "Train", "Data": "d.nc",
                       "TrainingParameters": {"Epochs": 3)" +
                       params + "}}",
                   source);
}

TEST(CdlValidation, DefaultsWithoutAValidationSet) {
  const TrainingParameters t = train_with("").training;
  EXPECT_TRUE(t.validation_data.empty());
  EXPECT_EQ(t.validation_interval, 1u);
  EXPECT_EQ(t.validation_k, 10u);
  EXPECT_EQ(t.patience, 0u);
  EXPECT_TRUE(t.keep_best);
}

TEST(CdlValidation, EveryKeyInAnyCaseAndPathsRelativeToTheFile) {
  const TrainingParameters t =
      train_with(R"(, "validationdata": ["vin.nc", "/abs/vout.nc"], "VALIDATIONINTERVAL": 5,
                 "ValidationK": 20, "patience": 3, "KeepBest": false)",
                 "runs/run.cdl")
          .training;
  EXPECT_EQ(t.validation_data, (std::vector<std::string>{"runs/vin.nc", "/abs/vout.nc"}));
  EXPECT_EQ(t.validation_interval, 5u);
  EXPECT_EQ(t.validation_k, 20u);
  EXPECT_EQ(t.patience, 3u);
  EXPECT_FALSE(t.keep_best);
  EXPECT_EQ(train_with(R"(, "ValidationData": "v.nc")").training.validation_data,
            std::vector<std::string>{"v.nc"});
}

TEST(CdlValidation, RangeChecks) {
  auto error = [](const std::string& params) { return error_of([&] { train_with(params); }); };
  EXPECT_CONTAINS(error(R"(, "ValidationInterval": 0)"),
                  "run.cdl: TrainingParameters.ValidationInterval:");
  EXPECT_CONTAINS(error(R"(, "ValidationK": 0)"), "TrainingParameters.ValidationK:");
  EXPECT_CONTAINS(error(R"(, "Patience": -1)"), "TrainingParameters.Patience:");
  EXPECT_CONTAINS(error(R"(, "KeepBest": "yes")"),
                  "TrainingParameters.KeepBest: expected true or false");
  EXPECT_CONTAINS(error(R"(, "ValidationData": [""])"),
                  "TrainingParameters.ValidationData: dataset file names must not be empty");
  EXPECT_CONTAINS(error(R"(, "Validation": "v.nc")"), "(did you mean ValidationK?)");
}

}  // namespace
}  // namespace nn
