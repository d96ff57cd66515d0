// A request the service refuses, with the HTTP status that says why (400 malformed, 404 unknown
// model or path, 405 wrong method, 413 too large, 503 not ready). Thrown while a request is
// parsed and routed, caught by Service::handle, answered as {"error": message}.
#pragma once

#include <stdexcept>
#include <string>

namespace nn::serve {

class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace nn::serve
