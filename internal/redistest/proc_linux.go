package redistest

import "syscall"

// sysProcAttr kills the server with the test binary, should it die without cleaning up.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
