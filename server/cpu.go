package server

import (
	"strconv"
	"syscall"
)

// infoCPU is INFO cpu, from getrusage: the process's CPU time, its children's (none: 0),
// and Redis's main thread's, which here is the process's: every event loop serves
// clients, none is the main one.
func infoCPU() [][2]string {
	sys, user, _ := rusage(syscall.RUSAGE_SELF)
	csys, cuser, _ := rusage(syscall.RUSAGE_CHILDREN)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	return [][2]string{
		{"used_cpu_sys", f(sys)}, {"used_cpu_user", f(user)},
		{"used_cpu_sys_children", f(csys)}, {"used_cpu_user_children", f(cuser)},
		{"used_cpu_sys_main_thread", f(sys)}, {"used_cpu_user_main_thread", f(user)},
	}
}

// rusage returns the CPU time, in seconds, of who (RUSAGE_SELF, RUSAGE_CHILDREN, or the
// calling thread's RUSAGE_THREAD): system, then user.
func rusage(who int) (sys, user float64, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0, 0, false
	}
	return float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6, float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6, true
}
