package af

/*
#include "af/af.h"
*/
import "C"

// transform runs one IR -> IR transform with the handles of eng, ir and an
// optional value argument.
func transform(eng *Engine, ir *IR, arg *Value, f func(c *C.af_context_t, i *C.af_ir_t, a *C.af_value_t, out **C.af_ir_t) *C.af_error_t) (*IR, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ip, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	var ap *C.af_value_t
	if arg != nil {
		if ap, err = arg.acquire(); err != nil {
			return nil, err
		}
		defer arg.release()
	}
	var out *C.af_ir_t
	e := f(cp, ip, ap, &out)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newIR(out), nil
}

// Batch (vmap). inAxes: a bool tree that is a prefix of the list of inputs
// (true = batched); nil = every input. Each batched leaf arrives as a list
// of its per-item values and every output leaf comes back as such a list.
func (ir *IR) Batch(eng *Engine, inAxes *Value) (*IR, error) {
	return transform(eng, ir, inAxes, func(c *C.af_context_t, i *C.af_ir_t, a *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_batch(c, i, a, out)
	})
}

// Pushforward (jvp): the result takes (primals, tangents) and returns
// [outputs, output_tangents], null where a tangent is zero.
func (ir *IR) Pushforward(eng *Engine) (*IR, error) {
	return transform(eng, ir, nil, func(c *C.af_context_t, i *C.af_ir_t, _ *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_pushforward(c, i, out)
	})
}

// Pullback (vjp): the result takes (primals, output_cotangent) and returns
// [outputs, input_cotangents], null where nothing flows.
func (ir *IR) Pullback(eng *Engine) (*IR, error) {
	return transform(eng, ir, nil, func(c *C.af_context_t, i *C.af_ir_t, _ *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_pullback(c, i, out)
	})
}

// DCE removes dead code. outUsed: a bool tree prefix of the output (nil =
// every output); outputs marked false become null. Checkpoints and calls of
// effectful host functions (not FunctionOptions.Pure) are always kept.
func (ir *IR) DCE(eng *Engine, outUsed *Value) (*IR, error) {
	return transform(eng, ir, outUsed, func(c *C.af_context_t, i *C.af_ir_t, a *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_dce(c, i, a, out)
	})
}

// CSE merges identical pure equations, calls of pure host functions
// (FunctionOptions.Pure) among them; calls of effectful host functions and
// checkpoints never.
func (ir *IR) CSE(eng *Engine) (*IR, error) {
	return transform(eng, ir, nil, func(c *C.af_context_t, i *C.af_ir_t, _ *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_cse(c, i, out)
	})
}

// CSEOptions is CSE with af_cse_with's JSON options (af.OptionsJSON
// describes them): {"merge_nondeterministic": true} merges identical LM
// calls too (calls of effectful host functions are never merged).
func (ir *IR) CSEOptions(eng *Engine, optionsJSON string) (*IR, error) {
	return transform(eng, ir, nil, func(c *C.af_context_t, i *C.af_ir_t, _ *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		p, n := cstr(optionsJSON)
		return C.af_cse_with(c, i, p, n, out)
	})
}

// CSEWith is CSE that also merges LM calls when mergeNondeterministic is
// true, through the af_cse_ex form (af_cse_options_t) that CSEOptions'
// JSON replaces.
func (ir *IR) CSEWith(eng *Engine, mergeNondeterministic bool) (*IR, error) {
	var opts C.af_cse_options_t
	opts.struct_size = C.uint32_t(C.sizeof_af_cse_options_t)
	if mergeNondeterministic {
		opts.merge_nondeterministic = 1
	}
	return transform(eng, ir, nil, func(c *C.af_context_t, i *C.af_ir_t, _ *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_cse_ex(c, i, &opts, out)
	})
}

// Sched annotates every equation with its dependency level and priority.
func (ir *IR) Sched(eng *Engine) (*IR, error) {
	return transform(eng, ir, nil, func(c *C.af_context_t, i *C.af_ir_t, _ *C.af_value_t, out **C.af_ir_t) *C.af_error_t {
		return C.af_sched(c, i, out)
	})
}

// EqnSched is the (level, priority) of equation i of a scheduled IR
// (CodeNotFound if the IR was not scheduled).
func (ir *IR) EqnSched(i int) (level uint32, priority float64, err error) {
	ip, err := ir.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer ir.release()
	var l C.uint32_t
	var p C.double
	e := C.af_ir_eqn_sched(ip, C.size_t(i), &l, &p)
	if err := takeError(e); err != nil {
		return 0, 0, err
	}
	return uint32(l), float64(p), nil
}

// Validate checks SSA, arity and kinds (CodeInvalidArgument naming the
// first problem).
func (ir *IR) Validate() error {
	ip, err := ir.acquire()
	if err != nil {
		return err
	}
	defer ir.release()
	e := C.af_ir_validate(ip)
	return takeError(e)
}
