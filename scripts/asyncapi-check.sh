#!/usr/bin/env bash
# asyncapi-check: read api/events.asyncapi.yaml with the AsyncAPI project's own
# parser (pinned), which validates the document against the AsyncAPI 3.0
# specification and its SNS and SQS bindings and resolves every $ref to the
# schema files, so that the promise of docs/CONTRACTS.md — AsyncAPI tools read the
# document — cannot rot unnoticed. api's TestAsyncAPIDocument checks the
# document against the code; this checks it against the specification.
#
# The parser checks no payload of an AsyncAPI 3 document itself, and knows
# JSON Schema only as draft-07. So the check hands it a schema parser of its
# own for the JSON Schema formats, which does what a tool that follows each
# message's schemaFormat does: it compiles the payload, the schema files
# resolved into it, with Ajv in exactly the dialect the format names, refuses
# a file that declares another ($schema), and validates the message's example
# in docs/events against it. A message whose format it does not know fails.
# make lint runs it; needs node and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

PARSER=@asyncapi/parser@3.6.6
AJV=ajv@8.20.0
AJV_FORMATS=ajv-formats@3.0.1

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts --prefer-offline "$PARSER" "$AJV" "$AJV_FORMATS" >/dev/null
cat >"$dir/check.mjs" <<'JS'
import { readFile } from 'node:fs/promises';
import { Parser, fromFile } from '@asyncapi/parser';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [doc, examples] = process.argv.slice(2);
// Each JSON Schema format a payload may declare: the Ajv of its dialect and
// the $schema that names the dialect.
const dialects = {
	'draft-07': { Ajv, metaSchema: 'http://json-schema.org/draft-07/schema' },
	'2020-12': { Ajv: Ajv2020, metaSchema: 'https://json-schema.org/draft/2020-12/schema' },
};
const formats = {};
for (const [version, dialect] of Object.entries(dialects)) {
	for (const type of ['application/schema', 'application/schema+json', 'application/schema+yaml']) {
		formats[`${type};version=${version}`] = dialect;
	}
}

const problems = [];
const validators = {}; // by message
const parser = new Parser();
parser.registerSchemaParser({
	getMimeTypes: () => Object.keys(formats),
	validate: async () => [], // the parser calls it for AsyncAPI 2 documents only
	async parse(input) {
		const where = input.path.join('.');
		const { Ajv: Validator, metaSchema } = formats[input.schemaFormat];
		// The files the payload refers to are resolved into it, each with its $schema.
		const declared = new Set();
		(function walk(v) {
			if (Array.isArray(v)) return v.forEach(walk);
			if (v === null || typeof v !== 'object') return;
			if (typeof v.$schema === 'string') declared.add(v.$schema.replace(/#$/, ''));
			Object.values(v).forEach(walk);
		})(input.data);
		for (const s of declared) {
			if (s !== metaSchema) problems.push(`${where}: a schema it refers to is ${s}, but its schemaFormat is ${input.schemaFormat}`);
		}
		const ajv = new Validator({ allErrors: true, allowUnionTypes: true });
		addFormats(ajv);
		try {
			validators[input.path[input.path.length - 3]] = ajv.compile(input.data);
		} catch (e) {
			problems.push(`${where}: does not compile as ${input.schemaFormat}: ${e.message}`);
		}
		return input.data;
	},
});

const { document, diagnostics } = await fromFile(parser, doc).parse();
// Severity 0 is an error; the others are advice (a newer AsyncAPI version exists, say).
for (const d of diagnostics.filter((d) => d.severity === 0)) problems.push(`${d.path.join('.')}: ${d.message}`);
if (document) {
	for (const m of document.allMessages()) {
		const format = m.schemaFormat();
		if (!formats[format]) {
			problems.push(`message ${m.id()}: payload schemaFormat ${format} is not a JSON Schema format this check compiles`);
			continue;
		}
		const validate = validators[m.id()];
		if (!validate) continue; // did not compile: reported above
		const example = JSON.parse(await readFile(`${examples}/${m.id()}.json`, 'utf8'));
		if (!validate(example)) {
			problems.push(`message ${m.id()}: ${examples}/${m.id()}.json does not match its payload: ${JSON.stringify(validate.errors)}`);
		}
	}
}
for (const p of problems) console.error(`${doc}: ${p}`);
if (!document || problems.length > 0) process.exit(1);
console.log(`asyncapi-check: ${doc} is valid AsyncAPI ${document.version()}: ` +
	`${document.allMessages().length} messages, ${document.allChannels().length} channels, ${document.allOperations().length} operations; ` +
	`every payload compiles in its schemaFormat's dialect and accepts its example`);
JS
node "$dir/check.mjs" "$PWD/api/events.asyncapi.yaml" "$PWD/docs/events"
