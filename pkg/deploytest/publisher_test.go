package deploytest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/lambdaapp/publisherapp"
	"latchkey/pkg/publisher"
)

// publisherID is the template's EventBridge publisher.
const publisherID = "PublisherFunction"

// streamEventsDir holds the sample DynamoDB Streams events.
const streamEventsDir = eventsDir + "/stream"

// publisherVariants are the stacks the publisher is deployed in: over
// the template's own table, and over a table attached with
// ExistingTableName whose stream label is given.
var publisherVariants = []struct {
	name  string
	conds map[string]bool
}{
	{"NewTable", map[string]bool{"CreateTable": true, "TracingEnabled": false, "PublishEvents": true}},
	{"ExistingTableTracing", map[string]bool{"CreateTable": false, "TracingEnabled": true, "PublishEvents": true}},
}

// TestTemplate_Publisher holds the publisher's part of the template to what
// the issue and pkg/publisher need: the table's stream feeds it through an
// event source mapping that reports batch item failures, bisects, bounds
// its retries and sends what it gives up on to a dead-letter queue of its
// own, and whose filter lets through exactly the records the function
// publishes; the function is told the bus; its resources exist only where
// there is a stream to read.
func TestTemplate_Publisher(t *testing.T) {
	tpl := loadTemplate(t)
	if got := fmt.Sprint(path(map[string]any(tpl), "Conditions", "PublishEvents")); got !=
		"map[Fn::Or:[map[Condition:CreateTable] map[Fn::Not:[map[Fn::Equals:[map[Ref:ExistingTableStreamLabel] ]]]]]]" {
		t.Errorf("condition PublishEvents is %s, want !Or [!Condition CreateTable, !Not [!Equals [!Ref ExistingTableStreamLabel, \"\"]]]", got)
	}
	if got := tpl.parameter(t, "ExistingTableStreamLabel")["Default"]; got != "" {
		t.Errorf("ExistingTableStreamLabel defaults to %q, want empty", got)
	}
	// Every resource and output of the publisher goes with it: with an
	// existing table and no stream label there is nothing to read.
	for _, section := range []string{"Resources", "Outputs"} {
		for id, r := range tpl[section].(map[string]any) {
			b, _ := json.Marshal(r)
			mentions := strings.Contains(id, "Publisher") || strings.Contains(string(b), "Publisher")
			if id == "Dashboard" || id == "Formats" {
				// Its publisher widgets (Formats: the alias it waits
				// for) are under !If [PublishEvents, ...]: drop them
				// and nothing of the publisher may remain.
				b, _ = json.Marshal(tpl.under(map[string]bool{"PublishEvents": false})[section].(map[string]any)[id])
				mentions = strings.Contains(string(b), "Publisher")
			}
			if mentions && path(r, "Condition") != "PublishEvents" {
				t.Errorf("%s %s concerns the publisher but has Condition %v, want PublishEvents", section, id, path(r, "Condition"))
			}
		}
	}
	table := tpl.resource(t, "Table", "AWS::DynamoDB::Table")
	if v := path(table, "StreamSpecification", "StreamViewType"); v != "NEW_IMAGE" && v != "NEW_AND_OLD_IMAGES" {
		t.Errorf("the table's stream view is %v, want NEW_IMAGE (the publisher reads the new image)", v)
	}
	if p := tpl.parameter(t, "EventBusName"); p["Default"] != publisher.DefaultEventBus {
		t.Errorf("EventBusName defaults to %v, want %s", p["Default"], publisher.DefaultEventBus)
	}

	for _, v := range publisherVariants {
		t.Run(v.name, func(t *testing.T) {
			tpl := tpl.under(v.conds)
			fn := tpl.resource(t, publisherID, "AWS::Serverless::Function")
			if refOf(tpl.functionEnv(t, publisherID)[publisherapp.EnvEventBusName]) != "EventBusName" {
				t.Errorf("%s is %v, want !Ref EventBusName", publisherapp.EnvEventBusName, tpl.functionEnv(t, publisherID)[publisherapp.EnvEventBusName])
			}
			evs, _ := fn["Events"].(map[string]any)
			if len(evs) != 1 {
				t.Fatalf("%d events, want the table's stream alone", len(evs))
			}
			var props map[string]any
			for _, ev := range evs {
				if path(ev, "Type") != "DynamoDB" {
					t.Fatalf("event type %v, want DynamoDB", path(ev, "Type"))
				}
				props, _ = path(ev, "Properties").(map[string]any)
			}
			stream := fmt.Sprint(props["Stream"])
			if want := map[bool]string{
				true:  "map[Fn::GetAtt:Table.StreamArn]",
				false: "map[Fn::Sub:arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingTableName}/stream/${ExistingTableStreamLabel}]",
			}[v.conds["CreateTable"]]; stream != want {
				t.Errorf("Stream %s, want %s", stream, want)
			}
			if got := strs(props["FunctionResponseTypes"]); !slices.Equal(got, []string{"ReportBatchItemFailures"}) {
				t.Errorf("FunctionResponseTypes %v, want [ReportBatchItemFailures]: the function names the first record it did not deliver", got)
			}
			if props["BisectBatchOnFunctionError"] != "true" {
				t.Errorf("BisectBatchOnFunctionError %v, want true", props["BisectBatchOnFunctionError"])
			}
			// Bounded, or a record that cannot be delivered holds its
			// shard for the stream's whole 24 hours.
			if n, err := strconv.Atoi(fmt.Sprint(props["MaximumRetryAttempts"])); err != nil || n < 1 {
				t.Errorf("MaximumRetryAttempts %v, want a bound", props["MaximumRetryAttempts"])
			}
			if n, err := strconv.Atoi(fmt.Sprint(props["MaximumRecordAgeInSeconds"])); err != nil || n < 60 || n >= 24*3600 {
				t.Errorf("MaximumRecordAgeInSeconds %v, want a bound under the stream's 24-hour retention", props["MaximumRecordAgeInSeconds"])
			}
			if got := path(props, "DestinationConfig", "OnFailure", "Destination", "Fn::GetAtt"); got != "PublisherDeadLetterQueue.Arn" {
				t.Errorf("OnFailure destination %v, want !GetAtt PublisherDeadLetterQueue.Arn", got)
			}
			tpl.resource(t, "PublisherDeadLetterQueue", "AWS::SQS::Queue")
			// A new table's stream from its start (the events written while
			// the stack was created); an attached table's from now, not
			// the 24 hours a former stack's publisher already put on the
			// bus.
			if want := map[bool]string{true: "TRIM_HORIZON", false: "LATEST"}[v.conds["CreateTable"]]; props["StartingPosition"] != want {
				t.Errorf("StartingPosition %v, want %s", props["StartingPosition"], want)
			}
			filters := list(path(props, "FilterCriteria", "Filters"))
			if len(filters) != 1 {
				t.Fatalf("%d filters, want 1", len(filters))
			}
			checkFilter(t, fmt.Sprint(path(filters[0], "Pattern")))
		})
	}

	// The alarm on skipped event items counts the lines pkg/publisher
	// logs for them.
	mf := tpl.resource(t, "PublisherSkippedEventsMetric", "AWS::Logs::MetricFilter")
	if got, want := mf["FilterPattern"], fmt.Sprintf(`{ $.msg = %q }`, publisher.SkippedMessage); got != want {
		t.Errorf("metric filter pattern %v, want %s", got, want)
	}
	if refOf(mf["LogGroupName"]) != "PublisherLogGroup" {
		t.Errorf("metric filter on %v, want the publisher's log group", mf["LogGroupName"])
	}
	tr := list(mf["MetricTransformations"])
	alarm := tpl.resource(t, "PublisherSkippedEventsAlarm", "AWS::CloudWatch::Alarm")
	if len(tr) != 1 || fmt.Sprint(path(tr[0], "MetricNamespace")) != fmt.Sprint(alarm["Namespace"]) || path(tr[0], "MetricName") != alarm["MetricName"] {
		t.Errorf("the metric filter's metric %v is not the one PublisherSkippedEventsAlarm watches (%v %v)", tr, alarm["Namespace"], alarm["MetricName"])
	}
}

// checkFilter evaluates the event source mapping's filter pattern, as
// Lambda does, on every record of the sample stream events: it must let
// through exactly the records pkg/publisher publishes.
func checkFilter(t *testing.T, pattern string) {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(pattern), &p); err != nil {
		t.Fatalf("filter pattern %q: %v", pattern, err)
	}
	files, err := filepath.Glob(filepath.Join(streamEventsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample stream events in %s (%v)", streamEventsDir, err)
	}
	var passed, stopped int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var batch struct{ Records []json.RawMessage }
		if err := json.Unmarshal(b, &batch); err != nil {
			t.Fatal(err)
		}
		for i, raw := range batch.Records {
			var generic map[string]any
			var rec events.DynamoDBEventRecord
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			got, err := filterMatches(p, generic)
			if err != nil {
				t.Fatalf("filter pattern %s: %v", pattern, err)
			}
			if want := publisher.IsEventInsert(rec); got != want {
				t.Errorf("%s record %d (%s %v): the filter lets it through: %v; the function publishes it: %v", filepath.Base(f), i, rec.EventName, rec.Change.Keys["pk"], got, want)
			}
			if got {
				passed++
			} else {
				stopped++
			}
		}
	}
	if passed == 0 || stopped == 0 {
		t.Errorf("the sample events have %d records the filter passes and %d it stops; they must have both", passed, stopped)
	}
}

// filterMatches is Lambda's event filtering on the forms the template
// uses: a pattern is an object whose keys must all match; an object
// value descends into the event; an array value lists what the event's
// value may be, each a literal string or {"prefix": "..."}. Anything else
// is an error, so that a pattern it cannot judge fails the test.
func filterMatches(pattern, event map[string]any) (bool, error) {
	for k, want := range pattern {
		got, ok := event[k]
		switch w := want.(type) {
		case map[string]any:
			sub, isObj := got.(map[string]any)
			if !ok || !isObj {
				return false, nil
			}
			m, err := filterMatches(w, sub)
			if err != nil || !m {
				return m, err
			}
		case []any:
			s, isStr := got.(string)
			if !ok || !isStr {
				return false, nil
			}
			var matched bool
			for _, alt := range w {
				switch a := alt.(type) {
				case string:
					matched = matched || s == a
				case map[string]any:
					prefix, isPrefix := a["prefix"].(string)
					if len(a) != 1 || !isPrefix {
						return false, fmt.Errorf("%v is not understood by this evaluator", a)
					}
					matched = matched || strings.HasPrefix(s, prefix)
				default:
					return false, fmt.Errorf("%v is not understood by this evaluator", alt)
				}
			}
			if !matched {
				return false, nil
			}
		default:
			return false, fmt.Errorf("%s: %v is not understood by this evaluator", k, want)
		}
	}
	return true, nil
}

// TestTemplate_PublisherLeastPrivilege: the publisher's role reads the
// table's stream and nothing of the table, puts events on the one bus,
// sends to its own dead-letter queue and writes its own log group; not one
// item of the table, in any partition, can it read or write.
func TestTemplate_PublisherLeastPrivilege(t *testing.T) {
	for _, v := range publisherVariants {
		t.Run(v.name, func(t *testing.T) {
			tpl := loadTemplate(t).under(v.conds)
			stream := map[bool]string{
				true:  `{"Fn::GetAtt":"Table.StreamArn"}`,
				false: `{"Fn::Sub":"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingTableName}/stream/${ExistingTableStreamLabel}"}`,
			}[v.conds["CreateTable"]]
			streams := map[bool]string{
				true:  `{"Fn::Sub":"${Table.Arn}/stream/*"}`,
				false: `{"Fn::Sub":"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingTableName}/stream/*"}`,
			}[v.conds["CreateTable"]]
			want := map[string]string{ // action -> its one resource
				"dynamodb:DescribeStream":   stream,
				"dynamodb:GetRecords":       stream,
				"dynamodb:GetShardIterator": stream,
				"dynamodb:ListStreams":      streams,
				"events:PutEvents":          `{"Fn::Sub":"arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/${EventBusName}"}`,
				"sqs:SendMessage":           `{"Fn::GetAtt":"PublisherDeadLetterQueue.Arn"}`,
				"logs:CreateLogStream":      `{"Fn::GetAtt":"PublisherLogGroup.Arn"}`,
				"logs:PutLogEvents":         `{"Fn::GetAtt":"PublisherLogGroup.Arn"}`,
			}
			if v.conds["TracingEnabled"] {
				for _, a := range xrayWriteActions {
					want[a] = `"*"`
				}
			}
			statements := tpl.statements(t, publisherID)
			got := map[string]string{}
			for _, st := range statements {
				if st["Effect"] != "Allow" || st["Condition"] != nil {
					t.Errorf("statement %v: Effect %v, Condition %v; want plain Allows", st["Sid"], st["Effect"], st["Condition"])
				}
				res := st["Resource"]
				if l := list(res); len(l) == 1 {
					res = l[0]
				}
				b, _ := json.Marshal(res)
				for _, a := range strs(st["Action"]) {
					if _, dup := got[a]; dup {
						t.Errorf("%s is granted twice", a)
					}
					got[a] = string(b)
				}
			}
			for a, r := range want {
				if got[a] != r {
					t.Errorf("%s on %s, want on %s", a, got[a], r)
				}
			}
			for a := range got {
				if _, ok := want[a]; !ok {
					t.Errorf("%s is granted; the publisher does not need it", a)
				}
			}
			// Not one item: every read and write, on the table and its
			// index, in an event's partition and in others.
			actions := append([]string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan",
				"dynamodb:ConditionCheckItem", "dynamodb:PartiQLSelect"}, writeActions...)
			for _, action := range actions {
				for _, index := range []bool{false, true} {
					for _, pk := range []string{"EVENT#evt_1", "USER#usr_1", "KEYHASH#00", "CONFIG"} {
						req := iamRequest{Action: action, Index: index, LeadingKeys: []string{pk}}
						allowed, err := decide(statements, req)
						if err != nil {
							t.Fatalf("%s: %v", req, err)
						}
						if allowed {
							t.Errorf("the publisher's role allows %s", req)
						}
					}
				}
			}
		})
	}
}

// TestTemplate_BuildTargets: sam build builds every function of the
// template, the publisher included, with the Makefile's
// build-<LogicalId> target (Metadata BuildMethod: makefile), which builds
// its command under functions/ as LAMBDA_BUILD does.
func TestTemplate_BuildTargets(t *testing.T) {
	tpl := loadTemplate(t)
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tpl.functions() {
		r := tpl["Resources"].(map[string]any)[id]
		if path(r, "Metadata", "BuildMethod") != "makefile" || path(r, "Properties", "CodeUri") != "." {
			t.Errorf("%s: BuildMethod %v, CodeUri %v; want makefile and .", id, path(r, "Metadata", "BuildMethod"), path(r, "Properties", "CodeUri"))
		}
		name := strings.ToLower(strings.TrimSuffix(id, "Function"))
		want := fmt.Sprintf("build-%s:\n\t$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/%s\n", id, name)
		if !strings.Contains(string(mk), want) {
			t.Errorf("the Makefile has no target\n%s", want)
		}
		if _, err := os.Stat(filepath.Join("../../functions", name, "main.go")); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}
