package af

/*
#include <stdlib.h>
#include "af/af.h"
*/
import "C"

import (
	"unsafe"
)

// Inspection and graph queries: JSON documents (format in docs/INSPECT.md),
// sub-IRs, reachability, slices and the dry-run cost.

// Flags of RelatedJSON.
const (
	Ancestors   uint32 = C.AF_IR_ANCESTORS
	Descendants uint32 = C.AF_IR_DESCENDANTS
	Deep        uint32 = C.AF_IR_DEEP
)

// irJSON runs one JSON-returning query on the IR.
func (ir *IR) irJSON(f func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t) (string, error) {
	p, err := ir.acquire()
	if err != nil {
		return "", err
	}
	defer ir.release()
	var b C.af_bytes_t
	e := f(p, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// JSON describes the whole IR: inputs, outputs, topological order,
// variables (producer, consumers) and equations.
func (ir *IR) JSON() (string, error) {
	return ir.irJSON(func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t { return C.af_ir_json(p, b) })
}

// EqnJSON describes equation i: prim, inputs (vars or literals with kinds),
// outputs, deps, params, sub-IR paths, tags.
func (ir *IR) EqnJSON(i int) (string, error) {
	return ir.irJSON(func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t {
		return C.af_ir_eqn_json(p, C.size_t(i), b)
	})
}

// VarJSON describes variable v: kind, producer (null for an input), consumers.
func (ir *IR) VarJSON(v uint32) (string, error) {
	return ir.irJSON(func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t {
		return C.af_ir_var_json(p, C.uint32_t(v), b)
	})
}

// RelatedJSON lists the ancestors or descendants of equation i
// (flags: Ancestors or Descendants, optionally |Deep): {"eqns": [...]},
// and with Deep also "nested": the paths of the equations inside their
// sub-IRs. A Deep answer over 64 MiB is CodeInvalidArgument; see
// RelatedJSONWith.
func (ir *IR) RelatedJSON(i int, flags uint32) (string, error) {
	return ir.irJSON(func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t {
		return C.af_ir_related_json(p, C.size_t(i), C.uint32_t(flags), b)
	})
}

// RelatedJSONWith is RelatedJSON with the largest answer accepted, in
// bytes (0 = libaf's default, 64 MiB). Only a Deep query is bounded: past
// the limit it fails with CodeInvalidArgument ("over the limit of N"),
// found before the answer is built.
func (ir *IR) RelatedJSONWith(i int, flags uint32, maxBytes uint64) (string, error) {
	return ir.irJSON(func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t {
		return C.af_ir_related_json_with(p, C.size_t(i), C.uint32_t(flags), C.uint64_t(maxBytes), b)
	})
}

// CostJSON is the dry-run LM cost for batch examples.
func (ir *IR) CostJSON(batch int64) (string, error) {
	return ir.irJSON(func(p *C.af_ir_t, b *C.af_bytes_t) *C.af_error_t {
		return C.af_ir_cost_json(p, C.int64_t(batch), b)
	})
}

// Sub is the sub-IR at path of equation i ("body", "branches/billing").
func (ir *IR) Sub(i int, path string) (*IR, error) {
	p, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var out *C.af_ir_t
	e := C.af_ir_sub(p, C.size_t(i), cs, C.size_t(len(path)), &out)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newIR(out), nil
}

// cPaths copies paths to C memory (always a non-NULL array).
func cPaths(paths []string) (**C.char, *C.size_t, func()) {
	n := len(paths)
	if n == 0 {
		n = 1
	}
	ptrs, pm := cSlice[*C.char](n)
	lens, lm := cSlice[C.size_t](n)
	for i, s := range paths {
		ptrs[i] = C.CString(s)
		lens[i] = C.size_t(len(s))
	}
	return &ptrs[0], &lens[0], func() {
		for _, s := range ptrs {
			C.free(unsafe.Pointer(s))
		}
		C.free(pm)
		C.free(lm)
	}
}

// Slice is the part of the IR computing the outputs at paths outputs
// ("answer", "0/x") from the inputs at paths inputs; nil inputs means the
// IR's own inputs. CodeInvalidArgument when the inputs do not suffice.
func (ir *IR) Slice(outputs []string, inputs []string) (*IR, error) {
	p, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	op, ol, ofree := cPaths(outputs)
	defer ofree()
	var ip **C.char
	var il *C.size_t
	if inputs != nil {
		var ifree func()
		ip, il, ifree = cPaths(inputs)
		defer ifree()
	}
	var out *C.af_ir_t
	e := C.af_ir_slice(p, op, ol, C.size_t(len(outputs)), ip, il, C.size_t(len(inputs)), &out)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newIR(out), nil
}
