package awspolicy

import (
	"strings"
	"testing"
)

func mustParse(t *testing.T, doc string) Document {
	t.Helper()
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const queue = "arn:aws:sqs:us-east-1:111111111111:q"

// TestConditionKeys holds the evaluator to IAM's rules for condition keys:
// a key the request lacks fails a matching operator and satisfies a negated
// one; a key's values are ORed (NORed when negated); keys and operators are
// ANDed.
func TestConditionKeys(t *testing.T) {
	t.Parallel()
	allowIf := func(cond string) *Document {
		d := mustParse(t, `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`","Condition":`+cond+`}}`)
		return &d
	}
	caller := Caller{ARN: "arn:aws:iam::222222222222:role/r"} // another account: the resource policy alone cannot allow
	other := []Document{mustParse(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:*","Resource":"*"}]}`)}
	tests := []struct {
		name, cond string
		ctx        map[string]string
		want       Decision
	}{
		{"matching, key present and equal", `{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:1:t"}}`, map[string]string{"aws:SourceArn": "arn:aws:sns:us-east-1:1:t"}, Allow},
		{"matching, key missing", `{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:1:t"}}`, nil, ImplicitDeny},
		{"negated, key missing", `{"ArnNotEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:1:t"}}`, nil, Allow},
		{"negated, key equal", `{"ArnNotEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:1:t"}}`, map[string]string{"aws:SourceArn": "arn:aws:sns:us-east-1:1:t"}, ImplicitDeny},
		{"values are ORed", `{"StringEquals":{"k":["a","b"]}}`, map[string]string{"k": "b"}, Allow},
		{"negated values are NORed", `{"StringNotEquals":{"k":["a","b"]}}`, map[string]string{"k": "b"}, ImplicitDeny},
		{"negated values, none matches", `{"StringNotEquals":{"k":["a","b"]}}`, map[string]string{"k": "c"}, Allow},
		{"keys are ANDed", `{"ArnNotEquals":{"k1":"x","k2":"y"}}`, map[string]string{"k1": "z", "k2": "y"}, ImplicitDeny},
		{"keys are ANDed, both differ", `{"ArnNotEquals":{"k1":"x","k2":"y"}}`, map[string]string{"k1": "z", "k2": "z"}, Allow},
		{"operators are ANDed", `{"StringEquals":{"k":"a"},"StringLike":{"j":"b*"}}`, map[string]string{"k": "a", "j": "c"}, ImplicitDeny},
		{"like is a glob", `{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:1:t-?"}}`, map[string]string{"aws:SourceArn": "arn:aws:sns:eu-west-1:1:t-9"}, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(allowIf(tt.cond), other, Request{Caller: caller, Action: "sqs:SendMessage", Resource: queue, Context: tt.ctx})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDecide holds the evaluator to IAM's combination of documents: an
// explicit deny anywhere wins; within an account either document allows;
// across accounts both must; a service principal needs the resource policy.
func TestDecide(t *testing.T) {
	t.Parallel()
	resource := mustParse(t, `{"Version":"2012-10-17","Statement":[
		{"Sid":"svc","Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"`+queue+`"},
		{"Sid":"acct","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::333333333333:root"},"Action":"sqs:ReceiveMessage","Resource":"`+queue+`"},
		{"Sid":"deny","Effect":"Deny","Principal":{"AWS":["arn:aws:iam::111111111111:role/banned"]},"Action":"sqs:*","Resource":"`+queue+`"}]}`)
	allowAll := []Document{mustParse(t, `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}`)}
	tests := []struct {
		name     string
		caller   Caller
		identity []Document
		action   string
		want     Decision
	}{
		{"same account, identity allows", Caller{ARN: "arn:aws:iam::111111111111:role/app"}, allowAll, "sqs:SendMessage", Allow},
		{"same account, nothing allows", Caller{ARN: "arn:aws:iam::111111111111:role/app"}, nil, "sqs:SendMessage", ImplicitDeny},
		{"an explicit deny beats the identity's allow", Caller{ARN: "arn:aws:iam::111111111111:role/banned"}, allowAll, "SQS:receivemessage", ExplicitDeny},
		{"another account, resource policy alone", Caller{ARN: "arn:aws:iam::333333333333:role/x"}, nil, "sqs:ReceiveMessage", ImplicitDeny},
		{"another account, both allow", Caller{ARN: "arn:aws:iam::333333333333:role/x"}, allowAll, "sqs:ReceiveMessage", Allow},
		{"another account, identity alone", Caller{ARN: "arn:aws:iam::444444444444:role/x"}, allowAll, "sqs:ReceiveMessage", ImplicitDeny},
		{"a service the resource policy names", Caller{Service: "sns.amazonaws.com"}, nil, "sqs:SendMessage", Allow},
		{"a service it does not name", Caller{Service: "events.amazonaws.com"}, nil, "sqs:SendMessage", ImplicitDeny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(&resource, tt.identity, Request{Caller: tt.caller, Action: tt.action, Resource: queue})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestParseRefusesWhatItCannotEvaluate: an element or an operator the
// evaluator does not implement is an error, never ignored.
func TestParseRefusesWhatItCannotEvaluate(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","NotPrincipal":"*","Action":"a","Resource":"r"}]}`,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","NotAction":"a","Resource":"r"}]}`,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"a","Resource":"r","Condition":{"ArnEqualsIfExists":{"k":"v"}}}]}`,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"x"},"Action":"a","Resource":"r"}]}`,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Maybe","Principal":"*","Action":"a","Resource":"r"}]}`,
		`{"Version":"2008-10-17","Statement":[]}`,
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("Parse(%s): got nil, want an error", doc)
		}
	}
	identityWithPrincipal := mustParse(t, `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"a","Resource":"*"}}`)
	if _, err := Decide(nil, []Document{identityWithPrincipal}, Request{Caller: Caller{ARN: "arn:aws:iam::1:role/r"}, Action: "a", Resource: queue}); err == nil || !strings.Contains(err.Error(), "Principal") {
		t.Errorf("an identity policy with a Principal: got %v, want an error", err)
	}
}
