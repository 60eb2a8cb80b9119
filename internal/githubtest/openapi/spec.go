package openapi

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type obj = map[string]any

// KeptRequired are the required fields a relaxed validation still requires
// (unless GitHub may send them as null):
// those that say which thing a body is and in what state, which countersign
// and go-github read. The fake may leave out any other field (most are
// hypermedia URLs and counters it does not model, or nulls go-github's
// omitempty drops: an absent field and a null read the same).
var KeptRequired = map[string]bool{
	"id": true, "number": true, "login": true, "name": true, "state": true,
	"status": true, "sha": true, "head_sha": true, "ref": true, "type": true,
	"action": true, "html_url": true, "user": true, "head": true, "base": true,
}

// Spec is a (subset of a) GitHub OpenAPI description, ready to validate
// JSON values against its schemas.
type Spec struct {
	Package, Version string
	doc              obj
	loc              string

	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
	strict   *jsonschema.Compiler
	relaxed  *jsonschema.Compiler
}

// Load reads a subset the generator wrote (gzipped if the name ends in .gz).
func Load(file string) (*Spec, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	d, ok := doc.(obj)
	if !ok {
		return nil, fmt.Errorf("%s: not a JSON object", file)
	}
	src, _ := d["x-source"].(obj)
	s := &Spec{doc: d, loc: "mem:///" + strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], ".gz"), compiled: map[string]*jsonschema.Schema{}}
	s.Package, _ = src["package"].(string)
	s.Version, _ = src["version"].(string)
	if s.strict, err = s.compiler(false); err != nil {
		return nil, err
	}
	if s.relaxed, err = s.compiler(true); err != nil {
		return nil, err
	}
	return s, nil
}

// compiler is a JSON Schema 2020-12 compiler holding the description with
// OpenAPI 3.0's nullable written as JSON Schema (type [t, "null"]); relaxed
// drops every `required`.
func (s *Spec) compiler(relaxed bool) (*jsonschema.Compiler, error) {
	doc := schemaOf(deepCopy(s.doc), relaxed, false)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// The library's uri-template check splits on "/" and so refuses GitHub's
	// own "{/name}" expressions: check only that braces pair up.
	c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: uriTemplate})
	if err := c.AddResource(s.loc, doc); err != nil {
		return nil, err
	}
	return c, nil
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case obj:
		o := make(obj, len(v))
		for k, x := range v {
			o[k] = deepCopy(x)
		}
		return o
	case []any:
		o := make([]any, len(v))
		for i, x := range v {
			o[i] = deepCopy(x)
		}
		return o
	}
	return v
}

// schemaOf rewrites OpenAPI-only keywords in place: nullable (3.0) becomes
// a "null" type (or an anyOf with one when the schema has no type);
// discriminator, xml and the like are left for the validator to ignore.
// inProps tells a map of property names from a schema.
func schemaOf(v any, relaxed, inProps bool) any {
	switch v := v.(type) {
	case obj:
		for k, x := range v {
			v[k] = schemaOf(x, relaxed, !inProps && (k == "properties" || k == "patternProperties"))
		}
		if inProps {
			return v
		}
		if relaxed {
			if req, ok := v["required"].([]any); ok {
				var keep []any
				for _, f := range req {
					if name, _ := f.(string); KeptRequired[name] && !allowsNull(v, name) {
						keep = append(keep, f)
					}
				}
				if keep == nil {
					delete(v, "required")
				} else {
					v["required"] = keep
				}
			}
			// Without `required` the branches of a oneOf overlap (a
			// simple-user is also an enterprise): one must match.
			if one, ok := v["oneOf"]; ok {
				delete(v, "oneOf")
				v["anyOf"] = one
			}
		}
		if n, ok := v["nullable"].(bool); ok {
			delete(v, "nullable")
			if n {
				switch t := v["type"].(type) {
				case string:
					v["type"] = []any{t, "null"}
					if e, ok := v["enum"].([]any); ok {
						v["enum"] = append(e, nil)
					}
				case nil:
					return obj{"anyOf": []any{v, obj{"type": "null"}}}
				}
			}
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = schemaOf(x, relaxed, false)
		}
	}
	return v
}

func pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// get follows a JSON pointer from the document's root, resolving a $ref
// found on the way (and at the end).
func (s *Spec) get(ptr string) (any, string, bool) {
	var v any = s.doc
	at := ""
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		v, at = s.deref(v, at)
		o, ok := v.(obj)
		if !ok {
			return nil, "", false
		}
		p = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		if v, ok = o[p]; !ok {
			return nil, "", false
		}
		at += pointer(p)
	}
	v, at = s.deref(v, at)
	return v, at, true
}

func (s *Spec) deref(v any, at string) (any, string) {
	for {
		o, ok := v.(obj)
		if !ok {
			return v, at
		}
		ref, ok := o["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return v, at
		}
		at = strings.TrimPrefix(ref, "#")
		var found bool
		v, _, found = s.get(at)
		if !found {
			return nil, at
		}
	}
}

// Templates are the description's path templates.
func (s *Spec) Templates() []Template {
	paths, _ := s.doc["paths"].(obj)
	out := make([]Template, 0, len(paths))
	for t := range paths {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// HasOperation tells whether the description has method on template.
func (s *Spec) HasOperation(method string, t Template) bool {
	_, _, ok := s.get(pointer("paths", t, strings.ToLower(method)))
	return ok
}

// Statuses are the response statuses the description documents for an
// operation ("200", "default", ...).
func (s *Spec) Statuses(method string, t Template) []string {
	v, _, _ := s.get(pointer("paths", t, strings.ToLower(method), "responses"))
	o, _ := v.(obj)
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RequestSchema is the JSON request body's schema of an operation (nil if it
// takes none), validating strictly.
func (s *Spec) RequestSchema(method string, t Template) (*jsonschema.Schema, error) {
	_, at, ok := s.get(pointer("paths", t, strings.ToLower(method), "requestBody", "content", "application/json", "schema"))
	if !ok {
		return nil, nil
	}
	return s.compile(at, false)
}

// ResponseSchema is the JSON body's schema of an operation's response with
// status (nil if the description gives it no JSON body); relaxed drops every
// `required`.
func (s *Spec) ResponseSchema(method string, t Template, status string, relaxed bool) (*jsonschema.Schema, error) {
	_, at, ok := s.get(pointer("paths", t, strings.ToLower(method), "responses", status, "content", "application/json", "schema"))
	if !ok {
		return nil, nil
	}
	return s.compile(at, relaxed)
}

// HookSchema is the payload schema of a webhook operation
// (HookOperation(event, action)); nil if the description has none.
func (s *Spec) HookSchema(op string, relaxed bool) (*jsonschema.Schema, error) {
	_, at, ok := s.get(pointer("webhooks", op))
	if !ok {
		return nil, nil
	}
	return s.compile(at, relaxed)
}

func (s *Spec) compile(at string, relaxed bool) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprint(relaxed, at)
	if sch, ok := s.compiled[key]; ok {
		return sch, nil
	}
	c := s.strict
	if relaxed {
		c = s.relaxed
	}
	sch, err := c.Compile(s.loc + "#" + at)
	if err != nil {
		return nil, err
	}
	s.compiled[key] = sch
	return sch, nil
}

// Decode parses JSON as the validator wants it (numbers kept exact).
func Decode(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// ComponentSchema is the schema #/components/schemas/name (nil if the
// subset has none).
func (s *Spec) ComponentSchema(name string, relaxed bool) (*jsonschema.Schema, error) {
	if _, _, ok := s.get(pointer("components", "schemas", name)); !ok {
		return nil, nil
	}
	return s.compile(pointer("components", "schemas", name), relaxed)
}

func uriTemplate(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	open := false
	for _, ch := range s {
		switch ch {
		case '{':
			if open {
				return fmt.Errorf("nested curly braces")
			}
			open = true
		case '}':
			if !open {
				return fmt.Errorf("unmatched closing brace")
			}
			open = false
		}
	}
	if open {
		return fmt.Errorf("no matching closing brace")
	}
	return nil
}

// allowsNull tells whether schema v's property name may be null (its schema,
// rewritten by schemaOf, has a "null" type or an anyOf branch of it).
func allowsNull(v obj, name string) bool {
	props, _ := v["properties"].(obj)
	p, _ := props[name].(obj)
	if t, ok := p["type"].([]any); ok {
		for _, x := range t {
			if x == "null" {
				return true
			}
		}
	}
	if any, ok := p["anyOf"].([]any); ok {
		for _, b := range any {
			if b, ok := b.(obj); ok && b["type"] == "null" {
				return true
			}
		}
	}
	return false
}
