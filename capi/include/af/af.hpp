/* af.hpp — a header-only C++17 wrapper over libaf's C API (af.h).
 *
 * The ABI stays C: this header only calls af_* functions, so a program built
 * with any C++17 compiler links against any libaf of the same ABI version.
 *
 *   af::Context ctx;
 *   af::Ir ir = ctx.trace([](af::Context& c, const std::vector<af::Value>& in) {
 *     return c.format("Hello, {}!", {in[0]});
 *   }, {ctx.str("x")});
 *   af::Program prog = af::Program::compile(ctx, ir);
 *   std::string out = prog.call(ctx, {ctx.str("libaf")}).str();
 *
 * Every af.h function has its wrapper here (in the parts below), except the
 * deprecated ones, which it does not call (tests/cpp/af_hpp_test.cpp checks
 * both against af.h). Ownership: every handle is RAII. Value, Ir, Program and Provider are
 * reference counted in libaf, so they copy (a new reference) and move.
 * Context, Future, Walk, CancelToken, LmRequest and HostRequest own something unique and
 * only move. A moved-from handle is empty; using it throws INVALID_ARGUMENT.
 *
 * Errors are exceptions (af::Error, carrying code, message and cause),
 * not a result type: most calls can fail (any operation inside a trace, every
 * run), constructors such as Context() must be able to fail, and a lambda
 * traced, registered or used as a provider then reads as straight-line code
 * whose failures propagate on their own. What a callback throws never
 * crosses into libaf: it is caught at the boundary and reported as libaf's
 * error; the caller gets it back (Error::origin(), or the very exception for
 * a trace function).
 *
 * Strings go in as std::string_view (any bytes; libaf checks UTF-8) and come
 * out as std::string.
 *
 * Threads. Thread safety is af.h's: handles may move between threads; Value,
 * Ir, Program and Provider may be used concurrently; a Context serializes its
 * own mutations. On top of that, the C++ rule for objects:
 *  - copies of a Value, Ir, Program or Provider are independent references
 *    (each copy holds its own reference in libaf), so copies of the same
 *    handle may be used and destroyed from any threads at once: a copy's
 *    destruction never frees what another copy still uses;
 *  - a single object follows the C++ rule of the standard library: no use
 *    of it concurrent with its own destruction, assignment or being moved
 *    from (give each thread its own copy instead);
 *  - a moved-from object is empty, not freed: using it throws af::Error
 *    (INVALID_ARGUMENT, "af::Value is empty (moved from)" and so on), and
 *    destroying or assigning to it is fine.
 * There is no close(): lifetime is RAII, so no method can race a close.
 * tests/cpp/af_hpp_handles_test.cpp holds this to account.
 *
 * Where each class is (af/hpp/, one file per handle family; each compiles on
 * its own, and this header includes them all):
 *   error.hpp     Code, Error, code_name; converting errors (detail::check)
 *   handle.hpp    detail::Unique / detail::Shared, the owners of C handles
 *   value.hpp     Value, Kind, and af::str, af::json, af::list, ...
 *   ir.hpp        Ir
 *   provider.hpp  Provider, LmRequest
 *   host.hpp      HostRequest
 *   cancel.hpp    CancelToken
 *   context.hpp   Context (TraceFn, HostFn, AsyncHostFn, Context::Scope)
 *   program.hpp   Program, RunOptions, Future (and Context::eval with options)
 *   walk.hpp      Walk
 *   library.hpp   version, abi_version, is_tracing, options_json,
 *                 profile_event, journals */
#ifndef AF_AF_HPP
#define AF_AF_HPP

// The parts, by quotes so that they come from this header's own directory:
// an af.hpp never mixes with the parts of another installed libaf.
#include "hpp/error.hpp"
#include "hpp/handle.hpp"
#include "hpp/value.hpp"
#include "hpp/ir.hpp"
#include "hpp/provider.hpp"
#include "hpp/host.hpp"
#include "hpp/cancel.hpp"
#include "hpp/context.hpp"
#include "hpp/program.hpp"
#include "hpp/walk.hpp"
#include "hpp/library.hpp"

// What af.hpp included when it was one file, kept so that a program relying
// on one of them through af.hpp still compiles.
#include <af/af.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#endif /* AF_AF_HPP */
