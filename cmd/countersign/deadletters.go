package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/app"
)

const deadlettersUsage = `usage:
  countersign deadletters [--data FILE | --redis-url URL] list
  countersign deadletters [--data FILE | --redis-url URL] retry ID...
  countersign deadletters [--data FILE | --redis-url URL] retry --all

Dead letters are deliveries that failed every processing attempt. "retry" puts
them back at the end of their task's queue; a running countersign picks them up.
With the embedded store (COUNTERSIGN_DATA) the file is held by the running server:
stop it first. With Redis this works while the servers run.
`

func deadletters(args []string, stdout, stderr io.Writer) int {
	st, rest, err := app.LoadStoreSettings("deadletters", args, os.Getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "countersign deadletters: %v\n", err)
		return 2
	}
	if len(rest) == 0 || (rest[0] != "list" && rest[0] != "retry") || (rest[0] == "retry" && len(rest) < 2) {
		fmt.Fprint(stderr, deadlettersUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := app.OpenStore(ctx, st)
	if err != nil {
		fmt.Fprintf(stderr, "countersign deadletters: %v\n", err)
		return 1
	}
	defer s.Close()
	dead, err := s.DeadLetters(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "countersign deadletters: %v\n", err)
		return 1
	}

	if rest[0] == "list" {
		if len(dead) == 0 {
			fmt.Fprintln(stdout, "no dead letters")
			return 0
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tEVENT\tKEY\tRECEIVED\tATTEMPTS\tLAST ERROR")
		for _, d := range dead {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, d.Event, d.Key, d.ReceivedAt.UTC().Format(time.RFC3339), d.Attempts, d.LastError)
		}
		w.Flush()
		return 0
	}

	ids := rest[1:]
	if len(ids) == 1 && ids[0] == "--all" {
		ids = ids[:0]
		for _, d := range dead {
			ids = append(ids, d.ID)
		}
	}
	code := 0
	for _, id := range ids {
		if err := s.RetryDeadLetter(ctx, id); err != nil {
			fmt.Fprintf(stderr, "countersign deadletters: retry %s: %v\n", id, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "requeued %s\n", id)
	}
	return code
}
