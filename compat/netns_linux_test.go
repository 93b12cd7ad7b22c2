package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netnsEnv marks the test binary started again as the helper of runInNetns.
const netnsEnv = "THROTTLED_COMPAT_NETNS"

// runInNetns runs server and then client in a network namespace of their own, made for this
// call (with a user namespace, so that it needs no privilege where unprivileged user
// namespaces are allowed, as on Debian; root needs nothing more). Inside there is only a
// loopback interface, brought up here: the server can listen on a fixed port such as 6379,
// which a test we do not write may dial, without meeting `make run`, a developer's Redis or
// another test, and the client can reach nothing else. The namespace goes when its last
// process exits. It returns what the client wrote to stdout and its exit code; the server
// is stopped with SIGTERM once the client is done, and must have exited cleanly.
func runInNetns(t *testing.T, addr string, server, client []string) (string, int) {
	t.Helper()
	args := append(append(append([]string{addr}, server...), "--"), client...)
	var stderr bytes.Buffer
	run := func(attr *syscall.SysProcAttr) ([]byte, error) {
		stderr.Reset()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), netnsEnv+"=1")
		cmd.SysProcAttr = attr
		cmd.Stderr = &stderr
		return cmd.Output()
	}
	out, err := run(&syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	})
	if errors.Is(err, syscall.EPERM) && os.Getuid() == 0 {
		// A container's seccomp profile may refuse user namespaces even to root, who needs none.
		out, err = run(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL})
	}
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("netns helper: %v\n%s", err, stderr.String())
		}
		code = exit.ExitCode()
	}
	if code >= netnsFailed {
		t.Fatalf("netns helper failed (%d):\n%s", code, stderr.String())
	}
	return string(out), code
}

// netnsFailed and up are the helper's own exit codes, told apart from the client's.
const netnsFailed = 100

// netnsMain is the helper's main, in the new namespace: args are the address the server
// listens on, the server's command, "--", and the client's command.
func netnsMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "netns: "+format+"\n", a...)
		return netnsFailed
	}
	if len(args) < 4 {
		return fail("usage: addr server... -- client...")
	}
	addr, rest := args[0], args[1:]
	var server, client []string
	for i, a := range rest {
		if a == "--" {
			server, client = rest[:i], rest[i+1:]
			break
		}
	}
	if len(server) == 0 || len(client) == 0 {
		return fail("usage: addr server... -- client...")
	}
	if err := loopbackUp(); err != nil {
		return fail("loopback: %v", err)
	}
	srv := exec.Command(server[0], server[1:]...)
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return fail("%s: %v", server[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			return fail("%s exited: %v", server[0], err)
		default:
		}
		if time.Now().After(deadline) {
			srv.Process.Kill()
			return fail("%s does not listen on %s", server[0], addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := exec.CommandContext(ctx, client[0], client[1:]...)
	cl.Stdout, cl.Stderr = os.Stdout, os.Stderr
	code := 0
	if err := cl.Run(); err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			srv.Process.Kill()
			return fail("%s: %v", client[0], err)
		}
		code = exit.ExitCode()
	}
	srv.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			return fail("%s after SIGTERM: %v", server[0], err)
		}
	case <-time.After(10 * time.Second):
		srv.Process.Kill()
		return fail("%s did not stop on SIGTERM", server[0])
	}
	return code
}

// loopbackUp brings up lo, which a new network namespace has down (and so without 127.0.0.1),
// as `ip link set lo up` would, without needing iproute2.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
