// Enumeration names: canonical spellings, DSSTNE's aliases, case-insensitivity, rejected names.
#include "config/enum_names.h"

#include <gtest/gtest.h>

#include "core/test_util.h"

namespace nn {
namespace {

TEST(EnumNames, CanonicalNamesUseDsstneSpelling) {
  EXPECT_STREQ(to_string(Activation::ReluMax), "RELUMax");
  EXPECT_STREQ(to_string(Activation::LeakyRectifiedLinear), "LeakyRectifiedLinear");
  EXPECT_STREQ(to_string(ErrorFunction::DataScaledMarginalCrossEntropy),
               "DataScaledMarginalCrossEntropy");
  EXPECT_STREQ(to_string(WeightInit::CaffeXavier), "CaffeXavier");
  EXPECT_STREQ(to_string(PoolingFunction::LRN), "LRN");
  EXPECT_STREQ(to_string(OptimizerKind::RMSProp), "RMSProp");
  EXPECT_STREQ(to_string(LayerKind::Target), "Target");
  EXPECT_STREQ(to_string(LayerType::FullyConnected), "FullyConnected");
  EXPECT_STREQ(to_string(NetworkKind::AutoEncoder), "AutoEncoder");
  EXPECT_STREQ(to_string(Command::Validate), "Validate");
}

// Every value a config may name parses back from its canonical name, in any case.
template <class E>
void expect_round_trip(std::initializer_list<E> values) {
  for (E v : values) {
    const std::string name = to_string(v);
    EXPECT_EQ(enum_from_string<E>(name), v) << name;
    EXPECT_EQ(enum_from_string<E>(to_lower(name)), v) << name;
    std::string upper = name;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(enum_from_string<E>(upper), v) << name;
  }
}

TEST(EnumNames, EveryAcceptedValueParsesFromItsNameInAnyCase) {
  expect_round_trip({LayerKind::Input, LayerKind::Hidden, LayerKind::Output, LayerKind::Target});
  expect_round_trip({LayerType::FullyConnected, LayerType::Convolutional, LayerType::Pooling});
  expect_round_trip({Activation::Sigmoid, Activation::Tanh, Activation::RectifiedLinear,
                     Activation::Linear, Activation::SoftPlus, Activation::SoftSign,
                     Activation::SoftMax, Activation::ReluMax, Activation::LinearMax,
                     Activation::ExponentialLinear, Activation::LeakyRectifiedLinear,
                     Activation::ScaledExponentialLinear});
  expect_round_trip({ErrorFunction::L1, ErrorFunction::L2, ErrorFunction::CrossEntropy,
                     ErrorFunction::ScaledMarginalCrossEntropy,
                     ErrorFunction::DataScaledMarginalCrossEntropy, ErrorFunction::Hinge,
                     ErrorFunction::L2Hinge});
  expect_round_trip({WeightInit::Xavier, WeightInit::CaffeXavier, WeightInit::Gaussian,
                     WeightInit::Uniform, WeightInit::UnitBall, WeightInit::Constant,
                     WeightInit::SELU});
  expect_round_trip({PoolingFunction::Max, PoolingFunction::Average, PoolingFunction::LRN,
                     PoolingFunction::Maxout, PoolingFunction::DotProduct,
                     PoolingFunction::Cosine});
  expect_round_trip({NetworkKind::FeedForward, NetworkKind::AutoEncoder});
  expect_round_trip({OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::AdaGrad,
                     OptimizerKind::Nesterov, OptimizerKind::RMSProp, OptimizerKind::AdaDelta,
                     OptimizerKind::Adam});
  expect_round_trip({Command::Train, Command::Predict, Command::Validate});
}

TEST(EnumNames, DsstneAliases) {
  EXPECT_EQ(enum_from_string<Activation>("relu"), Activation::RectifiedLinear);
  EXPECT_EQ(enum_from_string<Activation>("ReLU"), Activation::RectifiedLinear);
  EXPECT_EQ(enum_from_string<Activation>("rectifiedlinear"), Activation::RectifiedLinear);
  EXPECT_EQ(enum_from_string<Activation>("lrelu"), Activation::LeakyRectifiedLinear);
  EXPECT_EQ(enum_from_string<Activation>("LeakyRectifiedLinear"), Activation::LeakyRectifiedLinear);
  EXPECT_EQ(enum_from_string<Activation>("elu"), Activation::ExponentialLinear);
  EXPECT_EQ(enum_from_string<Activation>("exponentiallinear"), Activation::ExponentialLinear);
  EXPECT_EQ(enum_from_string<Activation>("SELU"), Activation::ScaledExponentialLinear);
  EXPECT_EQ(enum_from_string<Activation>("scaledexponentiallinear"),
            Activation::ScaledExponentialLinear);
  EXPECT_EQ(enum_from_string<ErrorFunction>("Cross Entropy"), ErrorFunction::CrossEntropy);
  EXPECT_EQ(enum_from_string<ErrorFunction>("cross entropy"), ErrorFunction::CrossEntropy);
  EXPECT_EQ(enum_from_string<PoolingFunction>("LocalResponseNormalization"), PoolingFunction::LRN);
  EXPECT_EQ(enum_from_string<PoolingFunction>("lrn"), PoolingFunction::LRN);
  EXPECT_EQ(enum_from_string<OptimizerKind>("RMSPROP"), OptimizerKind::RMSProp);
  // DSSTNE rejects MaxOut; we implement it (fully connected layers, Maxout.k pieces per unit).
  EXPECT_EQ(enum_from_string<Activation>("maxout"), Activation::MaxOut);
  EXPECT_EQ(enum_from_string<Activation>("RELUMax"), Activation::ReluMax);
}

TEST(EnumNames, NamesDsstneRejectsAreRejected) {
  EXPECT_FALSE(enum_from_string<Activation>("PRelu"));
  EXPECT_FALSE(enum_from_string<Activation>("ParametricRectifiedLinear"));
  EXPECT_FALSE(enum_from_string<PoolingFunction>("Stochastic"));
  EXPECT_FALSE(enum_from_string<PoolingFunction>("LCN"));
  EXPECT_FALSE(enum_from_string<PoolingFunction>("GlobalTemporal"));
  EXPECT_FALSE(enum_from_string<PoolingFunction>("None"));
  EXPECT_FALSE(enum_from_string<Activation>(""));
  EXPECT_FALSE(enum_from_string<Activation>("relu "));  // no trimming
  EXPECT_FALSE(enum_from_string<ErrorFunction>("CrossEntropyy"));
}

TEST(EnumNames, ChoicesListCanonicalNamesWithAliases) {
  const std::string choices = enum_choices<Activation>();
  EXPECT_CONTAINS(choices, "Sigmoid, Tanh, Linear, RectifiedLinear (ReLU)");
  EXPECT_CONTAINS(choices, "LeakyRectifiedLinear (LReLU)");
  EXPECT_CONTAINS(choices, "RELUMax");
  EXPECT_EQ(choices.find("Parametric"), std::string::npos);
  EXPECT_EQ(enum_choices<Command>(), "Train, Predict, Validate, Serve");
  EXPECT_CONTAINS(enum_choices<ErrorFunction>(), "CrossEntropy (Cross Entropy)");
}

TEST(EnumNames, ToLowerIsAsciiOnly) {
  EXPECT_EQ(to_lower("AbC_1 Z"), "abc_1 z");
  EXPECT_EQ(to_lower(""), "");
}

}  // namespace
}  // namespace nn
