package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Save writes the IR to path as a saved graph (.afg), atomically.
func (ir *IR) Save(path string) error {
	ip, err := ir.acquire()
	if err != nil {
		return err
	}
	defer ir.release()
	p, n := cstr(path)
	e := C.af_ir_save(ip, p, n)
	runtime.KeepAlive(path)
	return takeError(e)
}

// LoadIR reads and checks the saved graph at path (CodeFormat, CodeVersion,
// CodeIO).
func LoadIR(eng *Engine, path string) (*IR, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	p, n := cstr(path)
	var out *C.af_ir_t
	e := C.af_ir_load(cp, p, n, &out)
	runtime.KeepAlive(path)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newIR(out), nil
}

// Bytes is the IR as .afg bytes (the same IR gives the same bytes).
func (ir *IR) Bytes() ([]byte, error) {
	ip, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	var b C.af_bytes_t
	e := C.af_ir_to_bytes(ip, &b)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return []byte(takeBytes(&b)), nil
}

// bytesArg is data as a (pointer, length) pair into Go memory that holds
// no Go pointers (allowed for the duration of one cgo call).
func bytesArg(data []byte) (*C.uint8_t, C.size_t) {
	if len(data) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(emptyC)), 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(len(data))
}

// IRFromBytes builds an IR from .afg bytes after every check.
func IRFromBytes(eng *Engine, data []byte) (*IR, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	p, n := bytesArg(data)
	var out *C.af_ir_t
	e := C.af_ir_from_bytes(cp, p, n, &out)
	runtime.KeepAlive(data)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newIR(out), nil
}

// graphBytes runs one af_graph_* call with data and returns its owned bytes.
func graphBytes(eng *Engine, f func(c *C.af_context_t, out *C.af_bytes_t) *C.af_error_t) (string, error) {
	cp, err := eng.acquire()
	if err != nil {
		return "", err
	}
	defer eng.release()
	var b C.af_bytes_t
	e := f(cp, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// VerifyGraph runs every load check on .afg bytes and returns a one-line
// JSON summary.
func VerifyGraph(eng *Engine, data []byte) (string, error) {
	defer runtime.KeepAlive(data)
	return graphBytes(eng, func(c *C.af_context_t, out *C.af_bytes_t) *C.af_error_t {
		p, n := bytesArg(data)
		return C.af_graph_verify(c, p, n, out)
	})
}

// GraphToJSON is the readable JSON form of .afg bytes (round trip exact).
func GraphToJSON(eng *Engine, data []byte) (string, error) {
	defer runtime.KeepAlive(data)
	return graphBytes(eng, func(c *C.af_context_t, out *C.af_bytes_t) *C.af_error_t {
		p, n := bytesArg(data)
		return C.af_graph_to_json(c, p, n, out)
	})
}

// GraphFromJSON makes .afg bytes from the JSON form (checked as bytes are).
func GraphFromJSON(eng *Engine, json string) ([]byte, error) {
	defer runtime.KeepAlive(json)
	s, err := graphBytes(eng, func(c *C.af_context_t, out *C.af_bytes_t) *C.af_error_t {
		p, n := cstr(json)
		return C.af_graph_from_json(c, p, n, out)
	})
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// Save writes the compiled program (its IR and its plan) to path, so
// LoadProgram runs it without compiling again. The file also loads with
// LoadIR.
func (p *Program) Save(path string) error {
	pp, err := p.acquire()
	if err != nil {
		return err
	}
	defer p.release()
	cp, n := cstr(path)
	e := C.af_program_save(pp, cp, n)
	runtime.KeepAlive(path)
	return takeError(e)
}

// LoadProgram reads a program saved by Program.Save (its plan is checked
// against the IR; a graph saved from an IR is compiled here).
func LoadProgram(eng *Engine, path string) (*Program, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	p, n := cstr(path)
	var out *C.af_program_t
	e := C.af_program_load(cp, p, n, &out)
	runtime.KeepAlive(path)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return newProgram(out), nil
}
