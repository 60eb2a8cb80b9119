// Package scenarios embeds the scenario files of this directory (*.scenario,
// the format is in README.md and in package internal/scenario), so that
// the demo binary (cmd/countersign-demo) plays them from anywhere and tests
// play them all. The release binary does not import it.
package scenarios

import "embed"

// Files holds every *.scenario file of this directory, at its root.
//
//go:embed *.scenario
var Files embed.FS
