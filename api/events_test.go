package api_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/payments-outbox/payments-outbox/api"
)

// pinsFile lists the SHA-256 of every published schema, as sha256sum prints
// them, with api.EventSchemaBase written as baseMarker: the hash pins what a
// schema says, and a fork that gives its schemas a base of its own
// (scripts/fork.sh) keeps its pins.
const (
	pinsFile   = "events/published.sha256"
	baseMarker = "{EventSchemaBase}"
)

// schemaFiles returns the path in api.Events of every schema, sorted.
func schemaFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(api.Events, "events", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Ext(name) == ".json" {
			files = append(files, name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d schemas in api/events: the test is not looking where it should", len(files))
	}
	return files
}

// dataSchemaPath matches the file of one event type's data at one version;
// envelopeFile, the envelope's, is the one file of that form that is not.
var dataSchemaPath = regexp.MustCompile(`^events/([a-z][a-z0-9_.]*)/v([1-9][0-9]*)\.json$`)

const envelopeFile = "events/envelope/v1.json"

func isDataSchema(name string) bool { return name != envelopeFile && dataSchemaPath.MatchString(name) }

// keywordsDraft07Lacks are JSON Schema keywords that draft-07 does not have.
// The messages say their payloads are 2020-12 (TestAsyncAPIPayloadSchemaFormat),
// but draft-07 is the one JSON Schema every AsyncAPI 3.0 tool must read, so
// a tool that knows no other may read them as draft-07: a schema that used
// one would mean one thing to the services and another to that tool.
var keywordsDraft07Lacks = []string{
	"$defs", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary",
	"prefixItems", "unevaluatedItems", "unevaluatedProperties", "dependentRequired", "dependentSchemas",
	"minContains", "maxContains", "contentSchema",
}

// TestEventSchemasAreValid: every file is a JSON Schema 2020-12 whose $id is
// its place under api.EventSchemaBase, named as the services expect, and uses
// nothing draft-07 lacks.
func TestEventSchemasAreValid(t *testing.T) {
	for _, name := range schemaFiles(t) {
		t.Run(name, func(t *testing.T) {
			b, err := api.Events.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("not a JSON object: %v", err)
			}
			if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
				t.Errorf("$schema: got %v, want %s", got, want)
			}
			want := api.EventSchemaBase + strings.TrimPrefix(name, "events/")
			if got := doc["$id"]; got != want {
				t.Errorf("$id: got %v, want %s: the id is the file's place under api.EventSchemaBase", got, want)
			}
			if name != envelopeFile && !isDataSchema(name) {
				t.Errorf("a data schema's file must be events/<type>/v<N>.json")
			}
			walkKeys(doc, func(key string) {
				if slices.Contains(keywordsDraft07Lacks, key) {
					t.Errorf("uses %s, which draft-07 does not know", key)
				}
			})
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.AddResource(want, sdoc); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compile(want); err != nil { // validates against the 2020-12 meta-schema
				t.Errorf("not a valid JSON Schema 2020-12: %v", err)
			}
		})
	}
}

func walkKeys(v any, fn func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			fn(k)
			walkKeys(child, fn)
		}
	case []any:
		for _, child := range v {
			walkKeys(child, fn)
		}
	}
}

// TestPublishedSchemasAreImmutable: a schema, once published, never changes
// and never goes away, because consumers validate what they receive against
// it. events/published.sha256 pins every schema's hash: a changed schema
// fails here, and the way out is a new version beside it
// (docs/CONTRACTS.md). A new schema fails until its line is added.
func TestPublishedSchemasAreImmutable(t *testing.T) {
	pins := readPins(t)
	files := schemaFiles(t)
	for _, name := range files {
		rel := strings.TrimPrefix(name, "events/")
		b, err := api.Events.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got := pinOf(b)
		want, ok := pins[rel]
		switch {
		case !ok:
			t.Errorf("api/%s is not pinned. Once it is published it must not change: add this line to api/%s\n%s  %s", name, pinsFile, got, rel)
		case got != want:
			t.Errorf("api/%s changed after it was published: consumers validate events against it. Restore it, and publish the change as a new version beside it, a new file with its own pin (docs/CONTRACTS.md)", name)
		}
	}
	for rel := range pins {
		if !slices.Contains(files, "events/"+rel) {
			t.Errorf("api/events/%s was published and is gone: consumers may still receive events that name it", rel)
		}
	}
}

// pinOf hashes a schema as published, its base written as baseMarker.
func pinOf(b []byte) string {
	sum := sha256.Sum256(bytes.ReplaceAll(b, []byte(api.EventSchemaBase), []byte(baseMarker)))
	return hex.EncodeToString(sum[:])
}

func readPins(t *testing.T) map[string]string {
	t.Helper()
	b, err := api.Events.ReadFile(pinsFile)
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, rel, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("api/%s:%d: want <sha256>  <path>, got %q", pinsFile, n, line)
		}
		if _, dup := pins[rel]; dup {
			t.Fatalf("api/%s:%d: %s is pinned twice", pinsFile, n, rel)
		}
		pins[rel] = sum
	}
	return pins
}

// TestAsyncAPIDocument holds events.asyncapi.yaml to the schema files and to
// the resources localstack/init-aws.sh creates: every data schema has exactly
// one message, whose payload is the envelope with that schema as its data;
// every channel and operation carries every message; and the channels are
// the script's topic and each consumer's queue and DLQ, with its settings.
func TestAsyncAPIDocument(t *testing.T) {
	b, err := api.Events.ReadFile(api.AsyncAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", api.AsyncAPIFile, err)
	}
	if doc["asyncapi"] != "3.0.0" {
		t.Errorf("asyncapi: got %v, want 3.0.0", doc["asyncapi"])
	}
	at := func(pointer string) any { return resolve(t, doc, pointer) }

	messages, _ := at("#/components/messages").(map[string]any)
	described := map[string]string{} // schema file → message
	for _, key := range slices.Sorted(maps.Keys(messages)) {
		where := "components.messages." + key
		msg, _ := messages[key].(map[string]any)
		payload, _ := msg["payload"].(map[string]any)
		allOf, _ := lookup(payload, "schema", "allOf").([]any)
		if len(allOf) != 2 {
			t.Errorf("%s: payload.schema.allOf must be the envelope's schema and this message's type and data", where)
			continue
		}
		if ref, _ := lookup(allOf[0], "$ref").(string); ref != "./events/envelope/v1.json" {
			t.Errorf("%s: the payload's first part is %q, want the envelope's schema ./events/envelope/v1.json", where, ref)
		}
		props := lookup(allOf[1], "properties")
		dataRef, _ := lookup(props, "data", "$ref").(string)
		file := "events/" + strings.TrimPrefix(dataRef, "./events/")
		m := dataSchemaPath.FindStringSubmatch(file)
		if m == nil || !isDataSchema(file) || !strings.HasPrefix(dataRef, "./events/") {
			t.Errorf("%s: data refers to %q, want ./events/<type>/v<N>.json", where, dataRef)
			continue
		}
		if _, err := fs.Stat(api.Events, file); err != nil {
			t.Errorf("%s: data refers to %s, which is not in api/events: %v", where, dataRef, err)
		}
		typ, version := m[1], m[2]
		if other, dup := described[file]; dup {
			t.Errorf("%s and %s both describe %s", other, key, file)
		}
		described[file] = key
		if want := typ + ".v" + version; key != want {
			t.Errorf("%s: name it %s, after its type and version", where, want)
		}
		if msg["name"] != typ {
			t.Errorf("%s: name %v, want the event type %s", where, msg["name"], typ)
		}
		for attr, want := range map[string]string{"type": typ, "dataschema": api.EventSchemaID(typ, version)} {
			if got := lookup(props, attr, "const"); got != want {
				t.Errorf("%s: %s is const %v, want %s", where, attr, got, want)
			}
		}
		if ref, _ := lookup(msg, "headers", "$ref").(string); ref != "#/components/schemas/MessageAttributes" {
			t.Errorf("%s: headers must be #/components/schemas/MessageAttributes, the attributes the publisher sets, got %q", where, ref)
		}
	}
	for _, name := range schemaFiles(t) {
		if isDataSchema(name) && described[name] == "" {
			t.Errorf("api/%s has no message in %s: add one beside the others", name, api.AsyncAPIFile)
		}
	}

	// Every channel and every operation carries every message: an event type
	// goes through the topic, the queue and, when it cannot be posted, the DLQ.
	channels, _ := at("#/channels").(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(channels)) {
		var carried []string
		for key, ref := range asMap(lookup(channels[name], "messages")) {
			r, _ := lookup(ref, "$ref").(string)
			if at(r) == nil {
				t.Errorf("channels.%s.messages.%s: %q resolves to nothing", name, key, r)
			}
			carried = append(carried, strings.TrimPrefix(r, "#/components/messages/"))
		}
		slices.Sort(carried)
		if want := slices.Sorted(maps.Keys(messages)); !slices.Equal(carried, want) {
			t.Errorf("channels.%s carries %v, want every message %v", name, carried, want)
		}
	}
	operations, _ := at("#/operations").(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(operations)) {
		op := operations[name]
		chRef, _ := lookup(op, "channel", "$ref").(string)
		if at(chRef) == nil {
			t.Errorf("operations.%s.channel: %q resolves to nothing", name, chRef)
			continue
		}
		var carried []string
		for _, ref := range asSlice(lookup(op, "messages")) {
			r, _ := lookup(ref, "$ref").(string)
			if !strings.HasPrefix(r, chRef+"/messages/") || at(r) == nil {
				t.Errorf("operations.%s: message %q is not one of its channel's", name, r)
			}
			carried = append(carried, r)
		}
		if len(carried) != len(messages) {
			t.Errorf("operations.%s carries %d messages, want every one (%d)", name, len(carried), len(messages))
		}
	}

	script := initAWSDefaults(t)
	for _, c := range []struct{ pointer, setting string }{
		{"#/channels/paymentsEvents/address", "topic_name"},
		{"#/channels/paymentsEvents/bindings/sns/name", "topic_name"},
		{"#/channels/ledgerQueue/address", "queue_name"},
		{"#/channels/ledgerQueue/bindings/sqs/queue/name", "queue_name"},
		{"#/channels/ledgerQueue/bindings/sqs/queue/visibilityTimeout", "visibility_timeout"},
		{"#/channels/ledgerQueue/bindings/sqs/queue/messageRetentionPeriod", "retention_seconds"},
		{"#/channels/ledgerQueue/bindings/sqs/queue/redrivePolicy/deadLetterQueue/name", "dlq_name"},
		{"#/channels/ledgerQueue/bindings/sqs/queue/redrivePolicy/maxReceiveCount", "max_receive_count"},
		{"#/channels/ledgerQueue/bindings/sqs/deadLetterQueue/name", "dlq_name"},
		{"#/channels/ledgerQueue/bindings/sqs/deadLetterQueue/messageRetentionPeriod", "dlq_retention_seconds"},
		{"#/channels/ledgerDeadLetters/address", "dlq_name"},
		{"#/channels/ledgerDeadLetters/bindings/sqs/queue/name", "dlq_name"},
		{"#/channels/ledgerDeadLetters/bindings/sqs/queue/messageRetentionPeriod", "dlq_retention_seconds"},
		{"#/operations/publishPaymentEvents/bindings/sns/consumers/0/endpoint/name", "queue_name"},
		{"#/channels/webhooksQueue/address", "webhooks_queue_name"},
		{"#/channels/webhooksQueue/bindings/sqs/queue/name", "webhooks_queue_name"},
		{"#/channels/webhooksQueue/bindings/sqs/queue/visibilityTimeout", "visibility_timeout"},
		{"#/channels/webhooksQueue/bindings/sqs/queue/messageRetentionPeriod", "retention_seconds"},
		{"#/channels/webhooksQueue/bindings/sqs/queue/redrivePolicy/deadLetterQueue/name", "webhooks_dlq_name"},
		{"#/channels/webhooksQueue/bindings/sqs/queue/redrivePolicy/maxReceiveCount", "max_receive_count"},
		{"#/channels/webhooksQueue/bindings/sqs/deadLetterQueue/name", "webhooks_dlq_name"},
		{"#/channels/webhooksQueue/bindings/sqs/deadLetterQueue/messageRetentionPeriod", "dlq_retention_seconds"},
		{"#/channels/webhooksDeadLetters/address", "webhooks_dlq_name"},
		{"#/channels/webhooksDeadLetters/bindings/sqs/queue/name", "webhooks_dlq_name"},
		{"#/channels/webhooksDeadLetters/bindings/sqs/queue/messageRetentionPeriod", "dlq_retention_seconds"},
		{"#/operations/publishPaymentEvents/bindings/sns/consumers/1/endpoint/name", "webhooks_queue_name"},
	} {
		want, ok := script[c.setting]
		if !ok {
			t.Errorf("localstack/init-aws.sh no longer sets %s as %s=\"${VAR:-default}\" or %s=number: teach initAWSDefaults where it is", c.setting, c.setting, c.setting)
			continue
		}
		if got := fmt.Sprint(at(c.pointer)); got != want {
			t.Errorf("%s: got %s, want %s, the %s localstack/init-aws.sh sets", c.pointer, got, want, c.setting)
		}
	}
	for i := range 2 {
		if raw := at(fmt.Sprintf("#/operations/publishPaymentEvents/bindings/sns/consumers/%d/rawMessageDelivery", i)); raw != true {
			t.Errorf("subscription %d's rawMessageDelivery: got %v, want true: the consumers read the CloudEvent as the SQS body", i, raw)
		}
	}
}

// schemaFormats are the JSON Schema formats a message payload may declare
// (the AsyncAPI 3.0 media types, application/schema+json;version=<draft>),
// with the dialect each names.
var schemaFormats = map[string]*jsonschema.Draft{
	"application/schema+json;version=draft-07": jsonschema.Draft7,
	"application/schema+json;version=2020-12":  jsonschema.Draft2020,
}

// TestAsyncAPIPayloadSchemaFormat reads each message's payload as a tool that
// follows its schemaFormat does: the payload and every schema file it refers
// to are in that format's dialect (AsyncAPI 3.0: a referenced resource's
// format must match the referencing schema's), the payload compiles in it,
// and it accepts the published example of its event (docs/events). A
// format that names another dialect than the files' $schema fails here: a
// validator that trusts it cannot compile them.
func TestAsyncAPIPayloadSchemaFormat(t *testing.T) {
	b, err := api.Events.ReadFile(api.AsyncAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", api.AsyncAPIFile, err)
	}
	messages := asMap(lookup(doc, "components", "messages"))
	if len(messages) == 0 {
		t.Fatal("no components.messages: the test is not looking where it should")
	}
	// The document's own place, which its relative $refs resolve against.
	const docURL = "mem:///api/" + api.AsyncAPIFile
	for _, key := range slices.Sorted(maps.Keys(messages)) {
		t.Run(key, func(t *testing.T) {
			payload := asMap(lookup(messages[key], "payload"))
			format, _ := payload["schemaFormat"].(string)
			draft, ok := schemaFormats[format]
			if !ok {
				t.Fatalf("payload.schemaFormat %q is not one of %v", format, slices.Sorted(maps.Keys(schemaFormats)))
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(draft)
			c.AssertFormat()
			// Every file the payload reaches, directly or through another file.
			todo := refFiles(payload["schema"], ".")
			for seen := map[string]bool{}; len(todo) > 0; todo = todo[1:] {
				name := todo[0]
				if seen[name] {
					continue
				}
				seen[name] = true
				fb, err := api.Events.ReadFile(name)
				if err != nil {
					t.Fatalf("the payload refers to api/%s: %v", name, err)
				}
				fdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(fb))
				if err != nil {
					t.Fatalf("api/%s: %v", name, err)
				}
				if got, _ := asMap(fdoc)["$schema"].(string); got != "" && strings.TrimSuffix(got, "#") != draft.String() {
					t.Errorf("api/%s is JSON Schema %s, but the payload's schemaFormat %s says %s: a validator that follows schemaFormat cannot compile it", name, got, format, draft)
				}
				if err := c.AddResource("mem:///api/"+name, fdoc); err != nil {
					t.Fatal(err)
				}
				todo = append(todo, refFiles(fdoc, path.Dir(name))...)
			}
			schema, err := json.Marshal(payload["schema"]) // YAML's numbers become JSON's
			if err != nil {
				t.Fatal(err)
			}
			sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.AddResource(docURL, map[string]any{"payload": sdoc}); err != nil {
				t.Fatal(err)
			}
			compiled, err := c.Compile(docURL + "#/payload")
			if err != nil {
				t.Fatalf("the payload does not compile as %s: %v", draft, err)
			}
			example, err := os.ReadFile("../docs/events/" + key + ".json")
			if err != nil {
				t.Fatalf("the published example of %s: %v", key, err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(example))
			if err != nil {
				t.Fatal(err)
			}
			if err := compiled.Validate(inst); err != nil {
				t.Errorf("docs/events/%s.json does not match the message's payload: %v", key, err)
			}
		})
	}
}

// refFiles returns the schema files, as paths in api.Events, that the
// $refs in v point to, relative to dir; references within a document
// (#...) are left out.
func refFiles(v any, dir string) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
				file, _, _ := strings.Cut(ref, "#")
				out = append(out, path.Join(dir, file))
			}
			for _, child := range v {
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(v)
	return out
}

// initAWSDefaults reads the default of each setting localstack/init-aws.sh
// declares as name="${VAR:-default}" or name=number.
func initAWSDefaults(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../localstack/init-aws.sh")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z_]+)=(?:"\$\{[A-Z_]+:-([^}]*)\}"|([0-9]+))$`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2] + m[3]
	}
	return out
}

// resolve returns what a local reference, #/a/b, points to in doc, or nil.
func resolve(t *testing.T, doc map[string]any, ref string) any {
	t.Helper()
	pointer, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		t.Errorf("%q is not a reference within the document", ref)
		return nil
	}
	var keys []any
	for _, tok := range strings.Split(pointer, "/") {
		keys = append(keys, strings.NewReplacer("~1", "/", "~0", "~").Replace(tok))
	}
	return lookup(doc, keys...)
}

// lookup follows keys (strings, or indexes given as strings) into v; nil if
// any is missing.
func lookup(v any, keys ...any) any {
	for _, k := range keys {
		switch node := v.(type) {
		case map[string]any:
			v = node[k.(string)]
		case []any:
			i, err := strconv.Atoi(k.(string))
			if err != nil || i < 0 || i >= len(node) {
				return nil
			}
			v = node[i]
		default:
			return nil
		}
	}
	return v
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asSlice(v any) []any        { s, _ := v.([]any); return s }
