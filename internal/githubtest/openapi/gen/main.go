// Command gen writes the subset of GitHub's OpenAPI descriptions that the
// fake GitHub serves, for the conformance tests of package openapi:
//
//	internal/githubtest/testdata/openapi/api.github.com.json  (compact)
//	internal/githubtest/testdata/openapi/webhooks.json.gz    (about 1 MB, gzipped)
//
// It reads the unpacked npm packages @octokit/openapi and
// @octokit/openapi-webhooks (npm pack, then tar xzf), keeps the operations
// (path template and method) of every route githubtest.Routes lists and
// every action of the events in openapi.HookEvents, with every component
// they reference (transitively), drops prose (description, summary,
// examples), and records the package name and version it came from:
//
//	go run ./internal/githubtest/openapi/gen -rest DIR -webhooks DIR
//
// where each DIR holds the package's package.json and generated/.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/countersign/countersign/internal/githubtest"
	"github.com/countersign/countersign/internal/githubtest/openapi"
)

func main() {
	rest := flag.String("rest", "", "the unpacked @octokit/openapi package (holds package.json)")
	hooks := flag.String("webhooks", "", "the unpacked @octokit/openapi-webhooks package")
	out := flag.String("out", "internal/githubtest/testdata/openapi", "output directory")
	flag.Parse()
	if *rest == "" || *hooks == "" {
		log.Fatal("usage: gen -rest DIR -webhooks DIR [-out DIR]")
	}
	if err := genREST(*rest, *out); err != nil {
		log.Fatal(err)
	}
	if err := genHooks(*hooks, *out); err != nil {
		log.Fatal(err)
	}
}

type obj = map[string]any

func load(dir string) (name, version string, spec obj, err error) {
	var pkg struct{ Name, Version string }
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", "", nil, err
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", "", nil, err
	}
	b, err = os.ReadFile(filepath.Join(dir, "generated", "api.github.com.json"))
	if err != nil {
		return "", "", nil, err
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return "", "", nil, err
	}
	return pkg.Name, pkg.Version, spec, nil
}

func genREST(dir, out string) error {
	name, version, spec, err := load(dir)
	if err != nil {
		return err
	}
	paths, _ := spec["paths"].(obj)
	templates := make([]string, 0, len(paths))
	for t := range paths {
		templates = append(templates, t)
	}
	sort.Strings(templates)
	keep := obj{}
	for _, r := range githubtest.Routes() {
		if _, ok := openapi.NotInSpec[r.Method+" "+r.Pattern]; ok {
			continue
		}
		t, ok := openapi.TemplateFor(r.Pattern, templates)
		if !ok {
			log.Printf("no template for %s %s (the test will say so)", r.Method, r.Pattern)
			continue
		}
		item := paths[t].(obj)
		op, ok := item[strings.ToLower(r.Method)]
		if !ok {
			log.Printf("no %s for %s (the test will say so)", r.Method, t)
			continue
		}
		k, _ := keep[t].(obj)
		if k == nil {
			k = obj{}
			if p, ok := item["parameters"]; ok {
				k["parameters"] = p
			}
			keep[t] = k
		}
		k[strings.ToLower(r.Method)] = op
	}
	sub := obj{
		"openapi":  spec["openapi"],
		"x-source": obj{"package": name, "version": version, "file": "generated/api.github.com.json"},
		"paths":    keep,
	}
	sub["components"] = closure(spec, keep)
	return write(filepath.Join(out, "api.github.com.json"), strip(sub, false), false)
}

func genHooks(dir, out string) error {
	name, version, spec, err := load(dir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, e := range openapi.HookEvents {
		want[openapi.HookOperation(e, "")] = true
	}
	keep := obj{}
	hooks, _ := spec["webhooks"].(obj)
	for _, h := range hooks {
		post, _ := h.(obj)["post"].(obj)
		id, _ := post["operationId"].(string)
		event, _, _ := strings.Cut(id, "/")
		if !want[event] {
			continue
		}
		schema := post["requestBody"].(obj)["content"].(obj)["application/json"].(obj)["schema"]
		keep[id] = schema
	}
	sub := obj{
		"x-source": obj{"package": name, "version": version, "file": "generated/api.github.com.json"},
		"webhooks": keep,
	}
	sub["components"] = closure(spec, keep)
	return write(filepath.Join(out, "webhooks.json.gz"), strip(sub, false), true)
}

// closure is the components of spec that v references, transitively.
func closure(spec obj, v any) obj {
	comps, _ := spec["components"].(obj)
	out := obj{}
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case obj:
			if ref, ok := v["$ref"].(string); ok && !seen[ref] {
				seen[ref] = true
				parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
				if len(parts) != 2 {
					log.Fatalf("unexpected $ref %q", ref)
				}
				c, ok := comps[parts[0]].(obj)[parts[1]]
				if !ok {
					log.Fatalf("dangling $ref %q", ref)
				}
				kind, _ := out[parts[0]].(obj)
				if kind == nil {
					kind = obj{}
					out[parts[0]] = kind
				}
				kind[parts[1]] = c
				walk(c)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// strip drops prose and examples (but not properties of those names).
func strip(v any, inProperties bool) any {
	switch v := v.(type) {
	case obj:
		o := obj{}
		for k, x := range v {
			if !inProperties {
				switch k {
				case "description", "summary", "example", "examples", "externalDocs", "x-github", "x-githubEnterpriseOverlays", "tags", "title":
					continue
				}
			}
			o[k] = strip(x, !inProperties && (k == "properties" || k == "patternProperties"))
		}
		return o
	case []any:
		o := make([]any, len(v))
		for i, x := range v {
			o[i] = strip(x, false)
		}
		return o
	}
	return v
}

func write(file string, v any, gz bool) error {
	b, err := json.Marshal(v) // sorted keys: the output is deterministic
	if err != nil {
		return err
	}
	if !gz {
		fmt.Printf("%s: %d bytes\n", file, len(b))
		return os.WriteFile(file, b, 0o644)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes of JSON, %d gzipped\n", file, len(b), buf.Len())
	return os.WriteFile(file, buf.Bytes(), 0o644)
}
