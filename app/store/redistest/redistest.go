// Package redistest runs a private redis-server for tests.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Start runs a private redis-server (found on PATH) on a free local port, with
// its files in a temporary directory and persistence off, waits until it
// answers PING and stops it when the test ends. It returns the server's URL,
// "redis://127.0.0.1:<port>/0". The test fails if redis-server is not installed.
func Start(t testing.TB) (url string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH (%v); install it, e.g. `apt-get install -y redis-server`", err)
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: find a free port: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		logPath := filepath.Join(dir, fmt.Sprintf("redis-%d.log", attempt))
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		cmd := exec.Command(bin,
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--dir", dir,
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--protected-mode", "no",
			"--loglevel", "warning",
		)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			t.Fatalf("redistest: start %s: %v", bin, err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); logFile.Close(); close(exited) }()

		if err := waitReady(addr, exited, &waitErr, 10*time.Second); err != nil {
			_ = cmd.Process.Kill()
			<-exited
			log, _ := os.ReadFile(logPath)
			lastErr = fmt.Errorf("%v; server log:\n%s", err, log)
			continue // most likely the port was taken meanwhile
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return "redis://" + addr + "/0"
	}
	t.Fatalf("redistest: redis-server did not start: %v", lastErr)
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls addr with PING until it answers PONG, the server exits or
// the timeout passes.
func waitReady(addr string, exited <-chan struct{}, waitErr *error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited: %v", *waitErr)
		default:
		}
		if ping(addr) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s did not answer PING within %s", addr, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}
