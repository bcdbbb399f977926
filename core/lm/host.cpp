// host: the host application answers requests itself. Each started call is
// handed to `submit`; the host finishes it later from any thread.
#include "lm/providers.h"

namespace af::lm {

namespace {

class Host final : public Provider {
 public:
  Host(std::function<void(std::shared_ptr<Call>)> submit, std::function<void()> on_free, uint32_t max)
      : Provider("host", max), submit_(std::move(submit)), on_free_(std::move(on_free)) {}
  ~Host() override {
    shutdown();
    if (on_free_) on_free_();
  }

 protected:
  void start(std::shared_ptr<Call> call) noexcept override {
    try {
      submit_(std::move(call));
    } catch (const Error& e) {
      if (call) call->fail(e);
    } catch (...) {
      if (call) call->fail(Error(Code::Internal, "host provider: the submit callback failed"));
    }
  }

 private:
  std::function<void(std::shared_ptr<Call>)> submit_;
  std::function<void()> on_free_;
};

}  // namespace

ProviderPtr make_host(std::function<void(std::shared_ptr<Call>)> submit, std::function<void()> on_free,
                      uint32_t max_in_flight) {
  return std::make_shared<Host>(std::move(submit), std::move(on_free), max_in_flight);
}

}  // namespace af::lm
