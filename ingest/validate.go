package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"

	yaml3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Validation says what ingest does with a field of a plain object that
// its kind does not have (a misspelt "spec.hrad"), as kubectl's
// --validate does. Values that cannot be read (a quantity "2x", a string
// where a number goes) reject the object whatever it says, as the API
// server would refuse it.
type Validation string

const (
	// ValidateStrict rejects an object with an unknown field, naming
	// every such field with its line (kubectl --validate=strict).
	ValidateStrict Validation = "strict"
	// ValidateWarn ingests it and reports each unknown field in
	// Report.Warnings (kubectl --validate=warn).
	ValidateWarn Validation = "warn"
	// ValidateIgnore ingests it without a word (kubectl
	// --validate=ignore).
	ValidateIgnore Validation = "ignore"
)

// ParseValidation reads a --validate value: strict, warn or ignore, and
// kubectl's older true (strict) and false (ignore).
func ParseValidation(s string) (Validation, error) {
	switch s {
	case "strict", "true":
		return ValidateStrict, nil
	case "warn":
		return ValidateWarn, nil
	case "ignore", "false":
		return ValidateIgnore, nil
	}
	return "", fmt.Errorf("--validate %q: want strict, warn or ignore", s)
}

// FieldProblemsMax is the number of problems one object's check names;
// more are counted.
const FieldProblemsMax = 20

// fieldProblem is one field of an object that its kind does not have, or
// whose value cannot be read as that field's type.
type fieldProblem struct {
	// line is the problem's line in the object's text; 0 when unknown.
	line int
	// unknown marks a field the kind does not have.
	unknown bool
	text    string
}

// Limits of the field check, against YAML aliases that refer to
// themselves or multiply a document.
const (
	// FieldDepthMax is the deepest nesting checked.
	FieldDepthMax = 100
	// FieldNodesMax is the number of nodes checked in one object, aliases
	// counted each time they are followed.
	FieldNodesMax = 1_000_000
)

// fieldCheck holds the problems of one object.
type fieldCheck struct {
	problems []fieldProblem
	more     int
	// nodes counts the nodes checked; stopped is set once a limit is hit.
	nodes   int
	stopped bool
}

// enter counts node at depth, and reports whether the check goes on.
func (c *fieldCheck) enter(node *yaml3.Node, path string, depth int) bool {
	if c.stopped {
		return false
	}
	c.nodes++
	switch {
	case depth > FieldDepthMax:
		c.add(node.Line, false, "%s: nested more than %d deep (an alias of itself?): not checked further", orTop(path), FieldDepthMax)
	case c.nodes > FieldNodesMax:
		c.add(node.Line, false, "%s: more than %d nodes (aliases?): not checked further", orTop(path), FieldNodesMax)
	default:
		return true
	}
	c.stopped = true
	return false
}

func (c *fieldCheck) add(line int, unknown bool, format string, args ...any) {
	if len(c.problems) >= FieldProblemsMax {
		c.more++
		return
	}
	c.problems = append(c.problems, fieldProblem{line: line, unknown: unknown, text: fmt.Sprintf(format, args...)})
}

// knownKinds are the kinds whose fields a plain object is checked
// against: the built-in API groups a manifest given to quota is likely to
// hold. A kind of another group (a custom resource) is not checked: its
// schema lives in its CustomResourceDefinition, in the cluster.
var knownKinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, nodev1.AddToScheme,
		schedulingv1.AddToScheme, storagev1.AddToScheme, networkingv1.AddToScheme,
		policyv1.AddToScheme, autoscalingv2.AddToScheme, rbacv1.AddToScheme,
		coordinationv1.AddToScheme, discoveryv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("ingest: register API types: %v", err))
		}
	}
	return s
}()

// checkFields checks a plain object's fields against its kind's Go type:
// text is the object as written (YAML or JSON, its first line being line 1),
// object its JSON, used when text cannot be read as YAML. It returns
// nil for a kind it does not know.
func checkFields(text []byte, object json.RawMessage) *fieldCheck {
	doc := firstDocument(text)
	lines := true
	if doc == nil {
		doc = &yaml3.Node{}
		// Read from the JSON, whose lines say nothing of the input's.
		lines = false
		if err := yaml3.Unmarshal(object, doc); err != nil || len(doc.Content) == 0 {
			return nil
		}
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml3.MappingNode {
		return nil
	}
	var apiVersion, kind string
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "apiVersion":
			apiVersion = root.Content[i+1].Value
		case "kind":
			kind = root.Content[i+1].Value
		}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	obj, err := knownKinds.New(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	c := &fieldCheck{}
	walkFields(c, root, reflect.TypeOf(obj), "", 0)
	if !lines {
		for i := range c.problems {
			c.problems[i].line = 0
		}
	}
	return c
}

// firstDocument returns the first YAML document of text that holds a
// node, nil when there is none or text cannot be read.
func firstDocument(text []byte) *yaml3.Node {
	dec := yaml3.NewDecoder(bytes.NewReader(text))
	for range FieldDocumentsMax {
		var doc yaml3.Node
		if err := dec.Decode(&doc); err != nil {
			return nil
		}
		if len(doc.Content) > 0 && !isNull(resolve(doc.Content[0])) {
			return &doc
		}
	}
	return nil
}

// FieldDocumentsMax is the number of empty YAML documents the field check
// passes over to find an object's.
const FieldDocumentsMax = 100

// UnknownFields returns the fields of a plain object that its kind does
// not have, each at "NAME:LINE", for a client that reads manifests of its
// own: text is the input named name that holds the object, object its
// JSON.
func UnknownFields(name string, text []byte, object json.RawMessage) []Rejection {
	c := checkFields(text, object)
	if c == nil {
		return nil
	}
	rec := Record{Source: name, File: name, Line: 1}
	var unknown []Rejection
	for _, p := range c.problems {
		if p.unknown {
			unknown = append(unknown, Rejection{Source: rec.lineSource(p.line), Reason: p.text})
		}
	}
	return unknown
}

// The types whose JSON form is not their Go structure.
var (
	quantityType     = reflect.TypeFor[resource.Quantity]()
	intOrStringType  = reflect.TypeFor[intstr.IntOrString]()
	timeType         = reflect.TypeFor[metav1.Time]()
	microTimeType    = reflect.TypeFor[metav1.MicroTime]()
	durationType     = reflect.TypeFor[metav1.Duration]()
	jsonUnmarshaler  = reflect.TypeFor[json.Unmarshaler]()
	byteSliceType    = reflect.TypeFor[[]byte]()
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
)

// resolve follows an alias to the node it names.
func resolve(n *yaml3.Node) *yaml3.Node {
	for n.Kind == yaml3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml3.Node) bool {
	return n.Kind == yaml3.ScalarNode && n.ShortTag() == "!!null"
}

// walkFields checks node against Go type t at path.
func walkFields(c *fieldCheck, node *yaml3.Node, t reflect.Type, path string, depth int) {
	node = resolve(node)
	if !c.enter(node, path, depth) {
		return
	}
	if isNull(node) {
		return // null is every field's zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if walkOwnForm(c, node, t, path) {
		return
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if node.Kind != yaml3.MappingNode {
			c.add(node.Line, false, "%s: %s: want an object", orTop(path), quoteValue(node))
			return
		}
		if t.Kind() == reflect.Struct {
			walkStruct(c, node, t, path, map[string]bool{}, depth)
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if seen[k.Value] {
				c.add(k.Line, false, "%s: duplicate key %q", orTop(path), k.Value)
			}
			seen[k.Value] = true
			walkFields(c, v, t.Elem(), join(path, k.Value), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if node.Kind != yaml3.SequenceNode {
			c.add(node.Line, false, "%s: %s: want a list", orTop(path), quoteValue(node))
			return
		}
		for i, item := range node.Content {
			walkFields(c, item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	default:
		walkScalar(c, node, t, path)
	}
}

// walkOwnForm checks node against a type whose JSON form is not its Go
// structure, and reports whether t is one.
func walkOwnForm(c *fieldCheck, node *yaml3.Node, t reflect.Type, path string) bool {
	scalar := node.Kind == yaml3.ScalarNode
	switch t {
	case quantityType:
		if !scalar {
			c.add(node.Line, false, "%s: want a quantity such as 500m or 1Gi", path)
		} else if _, err := resource.ParseQuantity(node.Value); err != nil {
			c.add(node.Line, false, "%s: %s: %v", path, quoteValue(node), err)
		}
	case intOrStringType:
		if !scalar {
			c.add(node.Line, false, "%s: want an integer or a string", path)
		}
	case timeType, microTimeType:
		if _, err := time.Parse(time.RFC3339, node.Value); !scalar || err != nil {
			c.add(node.Line, false, "%s: %s: want a time such as 2026-01-02T15:04:05Z", path, quoteValue(node))
		}
	case durationType:
		if _, err := time.ParseDuration(node.Value); !scalar || err != nil {
			c.add(node.Line, false, "%s: %s: want a duration such as 30s", path, quoteValue(node))
		}
	case byteSliceType:
		if _, err := base64.StdEncoding.DecodeString(node.Value); !scalar || err != nil {
			c.add(node.Line, false, "%s: %s: want base64 text", path, quoteValue(node))
		}
	case rawExtensionType:
		// Any object.
	default:
		// A type with a form of its own that this check does not know
		// passes.
		return reflect.PointerTo(t).Implements(jsonUnmarshaler)
	}
	return true
}

// walkScalar checks node against a string, boolean or number type t.
func walkScalar(c *fieldCheck, node *yaml3.Node, t reflect.Type, path string) {
	tag := ""
	if node.Kind == yaml3.ScalarNode {
		tag = node.ShortTag()
	}
	switch t.Kind() {
	case reflect.String:
		// An unquoted date is a string to kubectl's YAML reader too.
		if tag != "!!str" && tag != "!!timestamp" {
			c.add(node.Line, false, "%s: %s: want a string (quote it)", orTop(path), quoteValue(node))
		}
	case reflect.Bool:
		if tag != "!!bool" && (tag != "!!str" || !yamlOneOneBool(node.Value)) {
			c.add(node.Line, false, "%s: %s: want true or false", orTop(path), quoteValue(node))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tag != "!!int" {
			c.add(node.Line, false, "%s: %s: want an integer", orTop(path), quoteValue(node))
		}
	case reflect.Float32, reflect.Float64:
		if tag != "!!int" && tag != "!!float" {
			c.add(node.Line, false, "%s: %s: want a number", orTop(path), quoteValue(node))
		}
	}
}

// walkStruct checks the keys of mapping node against the JSON fields of
// struct type t; seen holds the keys met so far (merge keys, "<<", bring
// in more).
func walkStruct(c *fieldCheck, node *yaml3.Node, t reflect.Type, path string, seen map[string]bool, depth int) {
	fields := jsonFields(t)
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if k.ShortTag() == "!!merge" {
			v = resolve(v)
			merged := []*yaml3.Node{v}
			if v.Kind == yaml3.SequenceNode {
				merged = v.Content
			}
			for _, m := range merged {
				if m = resolve(m); m.Kind == yaml3.MappingNode && c.enter(m, path, depth+1) {
					walkStruct(c, m, t, path, seen, depth+1)
				}
			}
			continue
		}
		if seen[k.Value] {
			c.add(k.Line, false, "%s: duplicate field %q", orTop(path), k.Value)
		}
		seen[k.Value] = true
		ft, ok := fields[k.Value]
		if !ok {
			c.add(k.Line, true, "unknown field %q", join(path, k.Value))
			continue
		}
		walkFields(c, v, ft, join(path, k.Value), depth+1)
	}
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields returns the JSON names of struct type t's fields, those of
// inlined structs included, with their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				maps.Copy(fields, jsonFields(ft))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
}

// yamlOneOneBool reports the YAML 1.1 booleans (yes, off, ...) that
// kubectl's YAML reader takes for true and false, and yaml.v3 for
// strings.
func yamlOneOneBool(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off":
		return true
	}
	return false
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func orTop(path string) string {
	if path == "" {
		return "(the object)"
	}
	return path
}

// quoteValue shows a node's value as written, a scalar quoted, clipped.
func quoteValue(n *yaml3.Node) string {
	switch n.Kind {
	case yaml3.ScalarNode:
		v := n.Value
		if len(v) > 64 {
			v = v[:64] + "..."
		}
		return fmt.Sprintf("%q", v)
	case yaml3.MappingNode:
		return "an object"
	case yaml3.SequenceNode:
		return "a list"
	}
	return "a value"
}

// sort splits the problems of a record's check into rejections and
// warnings: unknown fields are rejected under ValidateStrict, warnings
// under ValidateWarn, and nothing under ValidateIgnore.
func (c *fieldCheck) sort(rec Record, mode Validation) (reject []Rejection, warn []Rejection) {
	if c == nil {
		return nil, nil
	}
	for _, p := range c.problems {
		r := Rejection{Source: rec.lineSource(p.line), Reason: p.text}
		switch {
		case !p.unknown:
			reject = append(reject, r)
		case mode == ValidateWarn:
			warn = append(warn, r)
		case mode == ValidateIgnore:
		default:
			reject = append(reject, r)
		}
	}
	if c.more > 0 && len(reject) > 0 {
		reject = append(reject, Rejection{Source: rec.Source, Reason: fmt.Sprintf("and %d more problems", c.more)})
	}
	return reject, warn
}

// joinRejections is the one rejection of a record with several problems:
// the first's source, every problem in its reason.
func joinRejections(rs []Rejection) Rejection {
	var b bytes.Buffer
	b.WriteString(rs[0].Reason)
	for _, r := range rs[1:] {
		b.WriteString("; ")
		b.WriteString(r.String())
	}
	return Rejection{Source: rs[0].Source, Reason: b.String()}
}
