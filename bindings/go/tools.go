package af

/*
#include "af/af.h"
*/
import "C"

// Tool calling: an LM call that offers tools the model may call, and the
// history an agent threads from one call to the next.

// LMToolCall is an LM call offering tools: tools is a list of {"name",
// "description" (optional), "parameters"} where parameters is a schema tree
// as LMSchemaCall's whose root is a container (the arguments object; left
// out for a tool without arguments); names are distinct
// [A-Za-z0-9_-]{1,64}. Static, like a schema. history is a str (may be
// traced) holding the JSON array of the turns after messages, as ToolResults
// builds it ("" or "[]" for none).
//
// The result is a dict: "called" (bool: the model called tools, the reply is
// not final), "text" (str, "" when it only called tools), "names" (list of
// str, the tools called in order), "arguments" (list of str, each call's
// arguments as compact JSON) and "turn" (str, the model's turn as a history
// message). Each call is checked against its tool: a reply that fails is
// re-asked like an invalid structured reply, then CodeSchema. Recorded
// inside a trace, one blocking request outside; not differentiable.
func (eng *Engine) LMToolCall(messages, history, model, tools *Value) (*Value, error) {
	return eng.LMToolCallWith(messages, history, model, tools, nil)
}

// LMToolCallWith is LMToolCall with sampling params (as LMCallWith; nil =
// none).
func (eng *Engine) LMToolCallWith(messages, history, model, tools, params *Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues([]*Value{messages, history, model, tools})
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var pp *C.af_value_t
	if params != nil {
		if pp, err = params.acquire(); err != nil {
			return nil, err
		}
		defer params.release()
	}
	var out *C.af_value_t
	e := C.af_lm_tool_call(cp, ps[0], ps[1], ps[2], ps[3], pp, &out)
	return eng.takeResult(e, out, nil)
}

// ToolResults is the history after a tool-calling turn: history (a str, as
// LMToolCall's) with turn (LMToolCall's "turn") and one tool message per str
// of results (a list), answering the turn's calls in order. A final turn (no
// calls) with no results is appended alone. Recorded inside a trace (all
// three may be traced). CodeInvalidArgument: not one result per call, a
// malformed history or turn.
func (eng *Engine) ToolResults(history, turn, results *Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues([]*Value{history, turn, results})
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var out *C.af_value_t
	e := C.af_tool_results(cp, ps[0], ps[1], ps[2], &out)
	return eng.takeResult(e, out, nil)
}
