package functions

import (
	"strconv"

	"github.com/throttledhq/throttled/memory"
)

// functionMemory is Redis 7.0's functions figures of INFO memory: the functions'
// interpreters' memory (an estimate, as for scripts), the libraries' code, the libraries
// and functions.
func (f *Family) functionMemory() (vm, code int64, libs, funcs int) {
	vm = f.eng.Stats().StateBytes
	ls := f.Libraries()
	for _, l := range ls.List() {
		code += int64(len(l.Code))
	}
	libs, funcs = ls.Len()
	return vm, code, libs, funcs
}

// FunctionCode is the bytes of the libraries' code (MEMORY STATS's functions.caches).
func (f *Family) FunctionCode() int64 {
	_, code, _, _ := f.functionMemory()
	return code
}

// InfoMemory is Redis's scripting fields of INFO memory: the interpreters' memory (an
// estimate: gopher-lua does not count it), the cached scripts' and their number, the
// functions' (functionMemory), and the totals.
func (f *Family) InfoMemory() [][2]string {
	st := f.cfg.Scripts.Stats()
	fnVM, fnCode, nlibs, nfuncs := f.functionMemory()
	vm, scripts := st.StateBytes+fnVM, st.BodyBytes+fnCode
	return [][2]string{
		{"used_memory_lua", itoa(st.StateBytes)},
		{"used_memory_vm_eval", itoa(st.StateBytes)},
		{"used_memory_lua_human", memory.HumanBytes(uint64(st.StateBytes))},
		{"used_memory_scripts_eval", itoa(st.BodyBytes)},
		{"number_of_cached_scripts", itoa(int64(st.Scripts))},
		{"number_of_functions", itoa(int64(nfuncs))},
		{"number_of_libraries", itoa(int64(nlibs))},
		{"used_memory_vm_functions", itoa(fnVM)},
		{"used_memory_vm_total", itoa(vm)},
		{"used_memory_vm_total_human", memory.HumanBytes(uint64(vm))},
		{"used_memory_functions", itoa(fnCode)},
		{"used_memory_scripts", itoa(scripts)},
		{"used_memory_scripts_human", memory.HumanBytes(uint64(scripts))},
	}
}

// InfoScripting is INFO's scripting section: the scripts run, the interpreters idle, and
// what the server tells of the scripts busy now (busy) and of busy-reply-threshold
// (busyAfter, in milliseconds).
func (f *Family) InfoScripting(busy, busyAfter int64) [][2]string {
	st := f.cfg.Scripts.Stats()
	return [][2]string{
		{"script_calls", itoa(st.Calls + st.Natives)},
		{"script_calls_native", itoa(st.Natives)},
		{"script_calls_interpreted", itoa(st.Calls)},
		{"script_native_fallbacks", itoa(st.Fallbacks)},
		{"script_native", yesNo(f.cfg.Scripts.NativeOn())},
		{"number_of_cached_scripts", itoa(int64(st.Scripts))},
		{"lua_interpreters_idle", itoa(int64(st.States))},
		{"busy_scripts", itoa(busy)},
		{"busy_reply_threshold", itoa(busyAfter)},
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
