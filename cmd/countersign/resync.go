package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/reconcile"
)

const resyncUsage = `usage:
  countersign resync [--data FILE | --redis-url URL] [owner/repo]

Queues a resync: countersign compares every task of the repository (without
one: of every repository it tracks) with its record and repairs drift (a
state label changed by hand while it was down, or whose event never came).
A running countersign picks it up. With the embedded store (COUNTERSIGN_DATA)
the file is held by the running server: stop it first, and the resync runs
when it starts again. With Redis this works while the servers run.
`

func resync(args []string, stdout, stderr io.Writer) int {
	st, rest, err := app.LoadStoreSettings("resync", args, os.Getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "countersign resync: %v\n", err)
		return 2
	}
	r := reconcile.Resync{All: true, Why: "command"}
	switch {
	case len(rest) > 1:
		fmt.Fprint(stderr, resyncUsage)
		return 2
	case len(rest) == 1:
		owner, name, ok := strings.Cut(rest[0], "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			fmt.Fprintf(stderr, "countersign resync: %q is not owner/repo\n", rest[0])
			return 2
		}
		r = reconcile.Resync{Repo: rest[0], Why: "command"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := app.OpenStore(ctx, st)
	if err != nil {
		fmt.Fprintf(stderr, "countersign resync: %v\n", err)
		return 1
	}
	defer s.Close()
	if _, err := s.Accept(ctx, reconcile.NewResync(r, time.Now())); err != nil {
		fmt.Fprintf(stderr, "countersign resync: %v\n", err)
		return 1
	}
	target := r.Repo
	if r.All {
		target = "every tracked repository"
	}
	fmt.Fprintf(stdout, "resync of %s queued\n", target)
	return 0
}
