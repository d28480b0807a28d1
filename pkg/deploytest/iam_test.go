package deploytest_test

import (
	"fmt"
	"strings"
	"testing"
)

// iamRequest is one DynamoDB request as IAM authorizes it: one action on
// the table or an index, with the partition key values it touches (the
// dynamodb:LeadingKeys condition key).
type iamRequest struct {
	Action string // e.g. dynamodb:PutItem
	Index  bool   // on an index of the table rather than the table
	// LeadingKeys are the partition keys of the items; nil when the
	// recorder does not know them (Query, Scan), and then a statement
	// that conditions on them cannot be evaluated.
	LeadingKeys []string
	// SortKey of a single-item request, for messages and for telling
	// the items of one partition apart; "" otherwise.
	SortKey string
}

func (r iamRequest) String() string {
	where := "table"
	if r.Index {
		where = "index"
	}
	return fmt.Sprintf("%s on the %s, leading keys %q (sk %q)", r.Action, where, r.LeadingKeys, r.SortKey)
}

// The table and index ARNs a request is matched against: what
// !GetAtt Table.Arn and !Sub ${Table.Arn}/index/* resolve to.
const (
	tableARN = "arn:aws:dynamodb:us-east-1:123456789012:table/latchkey"
	indexARN = tableARN + "/index/gsi1"
)

// decide evaluates a role's statements for req as IAM evaluates an
// identity policy alone: an explicit Deny wins, then an Allow, and without
// either the request is denied. It knows exactly what the template uses
// (Effect, Action, Resource as the table's ARN, conditions on
// dynamodb:LeadingKeys) and returns an error for anything else, so that a
// policy it cannot judge fails the test instead of passing it.
func decide(statements []map[string]any, req iamRequest) (allowed bool, err error) {
	var allow, deny bool
	for _, s := range statements {
		for k := range s {
			switch k {
			case "Sid", "Effect", "Action", "Resource", "Condition":
			default:
				return false, fmt.Errorf("statement %v: %s is not understood by this evaluator", s["Sid"], k)
			}
		}
		applies, err := statementApplies(s, req)
		if err != nil {
			return false, fmt.Errorf("statement %v: %w", s["Sid"], err)
		}
		if !applies {
			continue
		}
		switch s["Effect"] {
		case "Allow":
			allow = true
		case "Deny":
			deny = true
		default:
			return false, fmt.Errorf("statement %v: Effect %v", s["Sid"], s["Effect"])
		}
	}
	return allow && !deny, nil
}

func statementApplies(s map[string]any, req iamRequest) (bool, error) {
	var actionMatches bool
	for _, a := range strs(s["Action"]) {
		actionMatches = actionMatches || globMatch(strings.ToLower(a), strings.ToLower(req.Action))
	}
	if !actionMatches {
		return false, nil
	}
	target := tableARN
	if req.Index {
		target = indexARN
	}
	var resourceMatches bool
	resources := list(s["Resource"])
	if resources == nil {
		resources = []any{s["Resource"]}
	}
	for _, r := range resources {
		resourceMatches = resourceMatches || globMatch(resolveARN(r), target)
	}
	if !resourceMatches {
		return false, nil
	}
	if s["Condition"] == nil {
		return true, nil
	}
	cond, ok := s["Condition"].(map[string]any)
	if !ok {
		return false, fmt.Errorf("Condition %v is not a map", s["Condition"])
	}
	// Every operator, and every key within one, must hold.
	for op, keys := range cond {
		km, ok := keys.(map[string]any)
		if !ok {
			return false, fmt.Errorf("Condition %s: %v is not a map", op, keys)
		}
		for key, values := range km {
			if !strings.EqualFold(key, "dynamodb:LeadingKeys") {
				return false, fmt.Errorf("condition key %s is not understood by this evaluator", key)
			}
			if req.LeadingKeys == nil {
				return false, fmt.Errorf("%s conditions on dynamodb:LeadingKeys, which the recorder does not know for %s", op, req.Action)
			}
			holds, err := setCondition(op, strs(values), req.LeadingKeys)
			if err != nil {
				return false, err
			}
			if !holds {
				return false, nil
			}
		}
	}
	return true, nil
}

// setCondition evaluates a set operator on a multivalued key, which
// dynamodb:LeadingKeys is. A plain StringLike on it is refused: AWS's
// documentation calls for a set operator on a multivalued key.
func setCondition(op string, patterns, values []string) (bool, error) {
	qualifier, base, ok := strings.Cut(op, ":")
	if !ok {
		return false, fmt.Errorf("condition %s on a multivalued key needs ForAnyValue: or ForAllValues:", op)
	}
	var match func(pattern, value string) bool
	switch base {
	case "StringEquals":
		match = func(p, v string) bool { return p == v }
	case "StringLike":
		match = globMatch
	default:
		return false, fmt.Errorf("condition operator %s is not understood by this evaluator", base)
	}
	matchesAny := func(v string) bool {
		for _, p := range patterns {
			if match(p, v) {
				return true
			}
		}
		return false
	}
	switch qualifier {
	case "ForAnyValue":
		for _, v := range values {
			if matchesAny(v) {
				return true, nil
			}
		}
		return false, nil
	case "ForAllValues":
		for _, v := range values {
			if !matchesAny(v) {
				return false, nil
			}
		}
		return true, nil
	default:
		return false, fmt.Errorf("condition qualifier %s is not understood by this evaluator", qualifier)
	}
}

// resolveARN turns a policy's Resource entry into an ARN pattern: the
// table's ARN for !GetAtt Table.Arn, for ${Table.Arn} in a !Sub and for the
// ARN a !Sub builds from the pseudo parameters and ExistingTableName (the
// attached table, given the same name), a literal as written, and anything
// else (another resource) a pattern no table request matches.
func resolveARN(r any) string {
	switch v := r.(type) {
	case string:
		return v
	case map[string]any:
		if v["Fn::GetAtt"] == "Table.Arn" {
			return tableARN
		}
		if sub, ok := v["Fn::Sub"].(string); ok {
			return strings.NewReplacer(
				"${Table.Arn}", tableARN,
				"${AWS::Partition}", "aws", "${AWS::Region}", "us-east-1", "${AWS::AccountId}", "123456789012",
				"${ExistingTableName}", "latchkey",
			).Replace(sub)
		}
	}
	return fmt.Sprintf("other:%v", r)
}

// globMatch matches IAM's wildcards: * any run of characters, ? one.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pattern[1:], s[1:])
	default:
		return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
	}
}

// TestDecide checks the evaluator the least-privilege test relies on,
// against what AWS documents for explicit denies, set operators and
// wildcards.
func TestDecide(t *testing.T) {
	table := map[string]any{"Fn::GetAtt": "Table.Arn"}
	index := map[string]any{"Fn::Sub": "${Table.Arn}/index/*"}
	allow := map[string]any{"Sid": "Table", "Effect": "Allow", "Action": []any{"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"}, "Resource": []any{table, index}}
	deny := map[string]any{"Sid": "AuthItems", "Effect": "Deny", "Action": []any{"dynamodb:PutItem", "dynamodb:BatchWriteItem"}, "Resource": table,
		"Condition": map[string]any{"ForAnyValue:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"CONFIG", "KEY#*"}}}}
	onlyUsers := map[string]any{"Sid": "Users", "Effect": "Allow", "Action": "dynamodb:*", "Resource": table,
		"Condition": map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"USER#*"}}}}
	for _, tc := range []struct {
		name       string
		statements []map[string]any
		req        iamRequest
		want       bool
		wantErr    bool
	}{
		{"AllowedAction", []map[string]any{allow}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"USER#1"}}, true, false},
		{"ActionNotGranted", []map[string]any{allow}, iamRequest{Action: "dynamodb:DeleteItem", LeadingKeys: []string{"USER#1"}}, false, false},
		{"IndexGranted", []map[string]any{allow}, iamRequest{Action: "dynamodb:Query", Index: true}, true, false},
		{"IndexNotGranted", []map[string]any{onlyUsers}, iamRequest{Action: "dynamodb:Query", Index: true}, false, false},
		{"DenyWins", []map[string]any{allow, deny}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"CONFIG"}}, false, false},
		{"DenyByPrefix", []map[string]any{allow, deny}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"KEY#key_1"}}, false, false},
		{"DenyIsExactWithoutWildcard", []map[string]any{allow, deny}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"CONFIGX"}}, true, false},
		{"DenyOtherPartition", []map[string]any{allow, deny}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"KEYHASH#ab"}}, true, false},
		{"DenyAnyOfBatch", []map[string]any{allow, deny, {"Effect": "Allow", "Action": "dynamodb:BatchWriteItem", "Resource": table}}, iamRequest{Action: "dynamodb:BatchWriteItem", LeadingKeys: []string{"USER#1", "KEY#k"}}, false, false},
		{"DenyNotForOtherAction", []map[string]any{allow, deny}, iamRequest{Action: "dynamodb:GetItem", LeadingKeys: []string{"CONFIG"}}, true, false},
		{"ForAllValuesAll", []map[string]any{onlyUsers}, iamRequest{Action: "dynamodb:UpdateItem", LeadingKeys: []string{"USER#1", "USER#2"}}, true, false},
		{"ForAllValuesOneOutside", []map[string]any{onlyUsers}, iamRequest{Action: "dynamodb:UpdateItem", LeadingKeys: []string{"USER#1", "ORG#2"}}, false, false},
		{"UnknownLeadingKeys", []map[string]any{allow, deny}, iamRequest{Action: "dynamodb:PutItem"}, false, true},
		{"UnknownConditionKey", []map[string]any{{"Effect": "Deny", "Action": "dynamodb:PutItem", "Resource": table, "Condition": map[string]any{"ForAnyValue:StringLike": map[string]any{"dynamodb:Attributes": "x"}}}}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"A"}}, false, true},
		{"SingleValuedOperator", []map[string]any{{"Effect": "Deny", "Action": "dynamodb:PutItem", "Resource": table, "Condition": map[string]any{"StringLike": map[string]any{"dynamodb:LeadingKeys": "KEY#*"}}}}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"KEY#1"}}, false, true},
		{"NotAction", []map[string]any{{"Effect": "Deny", "NotAction": "dynamodb:GetItem", "Resource": table}}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"A"}}, false, true},
		{"OtherResource", []map[string]any{{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": map[string]any{"Ref": "OtherTable"}}}, iamRequest{Action: "dynamodb:PutItem", LeadingKeys: []string{"A"}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decide(tc.statements, tc.req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("%s: got allowed %v, want %v", tc.req, got, tc.want)
			}
		})
	}
}
