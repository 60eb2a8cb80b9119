// Package scenarios embeds the scenario files of this directory (*.scenario,
// the format is in README.md and in package app/scenario), so that
// `countersign demo` plays them from anywhere and tests play them all.
//
// The go command leaves testdata directories out of ./... patterns, but a
// package here is built when imported by its path.
package scenarios

import "embed"

// Files holds every *.scenario file of this directory, at its root.
//
//go:embed *.scenario
var Files embed.FS
