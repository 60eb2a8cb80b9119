package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/app/reconcile"
)

func init() { addCommand(newResync) }

const resyncLong = `Queues a resync: countersign compares every task of the repository (without
one: of every repository it tracks) with its record and repairs drift (a state
label changed by hand while it was down, or whose event never came), and
recomputes the verification check of their open pull requests. A running
countersign picks it up. With the embedded store (COUNTERSIGN_DATA) the file is
held by the running server: stop it first, and the resync runs when it starts
again. With Redis this works while the servers run.`

func newResync(c *cli) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "resync [owner/repo] [--data FILE | --redis-url URL]",
		Short: "repair drift between GitHub and the task records",
		Long:  resyncLong,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := reconcile.Resync{All: true, Why: "command"}
			target := "every tracked repository"
			if len(args) == 1 {
				owner, name, ok := strings.Cut(args[0], "/")
				if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
					return usageErrorf("%q is not owner/repo", args[0])
				}
				r, target = reconcile.Resync{Repo: args[0], Why: "command"}, args[0]
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := sf.open(ctx, c, cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			if _, err := s.Accept(ctx, reconcile.NewResync(r, time.Now())); err != nil {
				return failed(err)
			}
			fmt.Fprintf(c.stdout, "resync of %s queued\n", target)
			return nil
		},
	}
	sf.add(cmd)
	return cmd
}
