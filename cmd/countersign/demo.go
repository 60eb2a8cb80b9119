package main

import (
	"github.com/spf13/cobra"
)

func init() { addCommand(newDemo) }

// demoMoved says where the demo went: it is a binary of its own, so that the
// fake GitHub and the story player it needs stay out of this one.
const demoMoved = "the demo is its own binary: from a clone, run go run ./cmd/countersign-demo [-v] [-list] [NAME | FILE]"

func newDemo(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:                "demo",
		Long:               demoMoved + ".",
		Short:              "moved: go run ./cmd/countersign-demo (the workflow scenarios against a fake GitHub)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "-h" || a == "--help" || a == "-help" {
					return cmd.Help()
				}
			}
			return usageErrorf("%s", demoMoved)
		},
	}
}
