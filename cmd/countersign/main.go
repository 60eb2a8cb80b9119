// Command countersign is the countersign GitHub App: `countersign serve` runs
// it; the other subcommands help operate it.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store"
)

const usage = `countersign — nothing is done until someone else confirms it.

usage:
  countersign serve [flags]         run the GitHub App (webhook server and workers)
  countersign deadletters list      list deliveries that failed every attempt
  countersign deadletters retry ID  put dead letters back in their queue (--all for every one)
  countersign resync [owner/repo]    repair drift between GitHub and the task records
  countersign demo [NAME | FILE]    play a workflow scenario against a fake GitHub (-list: the scenarios)
  countersign contract [flags]      write the verification contract of an issue (-h: the flags)
  countersign help                  this text

Settings (environment variables, each mirrored by a flag):
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage, app.SettingsHelp())
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "deadletters":
		return deadletters(args[1:], stdout, stderr)
	case "resync":
		return resync(args[1:], stdout, stderr)
	case "demo":
		return demo(args[1:], stdout, stderr)
	case "contract":
		return contract(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage, app.SettingsHelp())
		return 0
	}
	fmt.Fprintf(stderr, "countersign: unknown command %q (try: countersign help)\n", args[0])
	return 2
}

func serve(args []string, stderr io.Writer) int {
	st, err := app.LoadSettings(args, os.Getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "countersign: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: st.LogLevel}))
	store.SetRedisLogger(log, 10*time.Second)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	s, err := app.OpenStore(ctx, st)
	if err != nil {
		fmt.Fprintf(stderr, "countersign: %v\n", err)
		return 1
	}
	srv, err := app.New(st, s, log)
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "countersign: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", st.Listen)
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "countersign: COUNTERSIGN_LISTEN (--listen): %v\n", err)
		return 1
	}
	if err := srv.Run(ctx, ln); err != nil {
		log.Error("server stopped", "error", err)
		return 1
	}
	return 0
}
