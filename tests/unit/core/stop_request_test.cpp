// core/stop_request: the first signal of a request sticks until cleared, and jobs turn a pending
// request into nn::Interrupted carrying the signal.
#include "core/stop_request.h"

#include <gtest/gtest.h>

#include <csignal>

#include "core/error.h"

namespace nn {
namespace {

TEST(StopRequest, TheFirstSignalSticksUntilCleared) {
  clear_stop_request();
  EXPECT_EQ(stop_signal(), 0);
  EXPECT_NO_THROW(throw_if_stop_requested("before writing x"));
  request_stop(SIGINT);
  request_stop(SIGTERM);
  EXPECT_EQ(stop_signal(), SIGINT);
  try {
    throw_if_stop_requested("before writing x; nothing was written");
    ADD_FAILURE() << "did not throw";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal(), SIGINT);
    EXPECT_EQ(std::string(e.what()), "stopped by SIGINT before writing x; nothing was written");
    EXPECT_TRUE(e.checkpoint().empty());
  }
  clear_stop_request();
  EXPECT_EQ(stop_signal(), 0);
}

TEST(StopRequest, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGHUP), "SIGHUP");
  EXPECT_EQ(signal_name(77), "signal 77");
}

}  // namespace
}  // namespace nn
