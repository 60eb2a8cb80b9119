package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/app/buildinfo"
)

func init() { addCommand(newVersion) }

func newVersion(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the module version and the commit this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(c.stdout, buildinfo.Read())
			return nil
		},
	}
}
