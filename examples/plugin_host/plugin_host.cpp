// plugin_host.cpp: the C++ twin of plugin_host.c, written with af/af.hpp.
// A host application runs graphs saved by another process: it registers its
// own host function ("lookup") by name and its own LM provider — requests are
// answered on a thread of the host, as a real plugin would answer them from
// its own event loop — then loads the saved agent graph and runs it. A graph
// that needs a function this host did not register fails with NOT_FOUND
// naming it. Exits non-zero if anything differs from what is expected.
// Usage: plugin_host_cpp AGENT.afg MISSING.afg
#include <af/af.hpp>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plugin_host_cpp AGENT.afg MISSING.afg\n");
    return 2;
  }
  try {
    af::Context ctx;
    // The host's own tool: notes about a topic.
    ctx.register_function("lookup", ctx.str("str"), [&ctx](const std::vector<af::Value>& args) {
      return ctx.str("notes on " + args.at(0).str().substr(0, 100));
    });
    // The host's own model: answers on a thread of its own, from the request JSON.
    af::Provider model = af::Provider::host([](af::LmRequest& req) {
      std::thread([r = std::move(req)]() mutable {
        try {
          // A real host would call its model here; this one reports what it got.
          r.complete("host model saw " + std::to_string(r.json().size()) + " bytes of request");
        } catch (...) {
          r.fail_with_current_exception();
        }
      }).detach();
    });
    ctx.route("*", model);

    // 1. The agent graph runs with the host's function and model.
    af::Value result = af::Program::load(ctx, argv[1]).call(ctx, {ctx.str("saved graphs")});
    std::string json = result.json();
    std::printf("%s -> %s\n", argv[1], json.c_str());
    if (result["notes"].str() != "notes on saved graphs" ||
        result["answer"].str().rfind("host model saw ", 0) != 0) {
      std::fprintf(stderr, "plugin_host_cpp: unexpected result\n");
      return 1;
    }

    // 2. A graph needing a function the host did not register: NOT_FOUND.
    try {
      af::Program::load(ctx, argv[2]).call(ctx, {ctx.str("saved graphs")});
    } catch (const af::Error& e) {
      if (e.code() == af::Code::NotFound && std::string(e.what()).find("translate") != std::string::npos) {
        std::printf("%s -> NOT_FOUND: %s\n", argv[2], e.what());
        return 0;
      }
      throw;
    }
    std::fprintf(stderr, "plugin_host_cpp: expected NOT_FOUND naming \"translate\"\n");
    return 1;
  } catch (const af::Error& e) {
    std::fprintf(stderr, "plugin_host_cpp: %s: %s\n", af::code_name(e.code()), e.what());
    return 1;
  }
}
