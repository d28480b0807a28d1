package publisher_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi"
)

// TestPublisher_TableStream takes its records from a real stream: a table
// made as the template makes it (tablestore.TableDefinition with a
// NEW_IMAGE stream) in DynamoDB Local, written by the store (a user,
// changed, deleted) under an EventSource with the API's encoder, as a
// request writes it: the store puts the event items itself (pk
// EVENT#<day>, sk the event id, the event's JSON in "event", its type in
// "type"), and their stream records, read with GetRecords and given the
// shape Lambda delivers, go through the function's handler to moto's
// EventBridge: the events, and nothing else, arrive, as the store wrote
// them.
func TestPublisher_TableStream(t *testing.T) {
	if os.Getenv(MotoEndpointEnv) == "" {
		t.Skip(MotoEndpointEnv + " is not set; run through scripts/dynamodb-local.sh scripts/moto.sh (make test does)")
	}
	ctx := context.Background()
	client := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	upd, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:           aws.String(table),
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewImage},
	})
	if err != nil {
		t.Fatal(err)
	}
	streamARN := aws.ToString(upd.TableDescription.LatestStreamArn)

	store := dynamostore.New(client, table)
	opts := account.WriteOptions{Events: &account.EventSource{
		Actor: account.Actor{KeyID: "key_1"}, RequestID: "req-stream", Encode: httpapi.EncodeEvent,
	}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	user := account.User{ID: "usr_stream1", Email: "erin@example.com", Name: "Erin", Role: "viewer", CreatedAt: now, UpdatedAt: now}
	if err := store.CreateUser(ctx, opts, user); err != nil {
		t.Fatal(err)
	}
	if _, err := store.UpdateUser(ctx, opts, user.ID, account.UserPatch{Name: aws.String("Erin B."), UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteUser(ctx, opts, user.ID); err != nil {
		t.Fatal(err)
	}

	batch := readStream(t, streamARN)
	var ids, types []string
	var others int
	for _, r := range batch.Records {
		if r.EventName == "INSERT" && strings.HasPrefix(r.Change.Keys["pk"].String(), "EVENT#") {
			ids = append(ids, r.Change.Keys["sk"].String())
			types = append(types, r.Change.NewImage["type"].String())
		} else {
			others++
		}
	}
	if want := []string{"user.created", "user.updated", "user.deleted"}; !slices.Equal(types, want) || others < 4 {
		t.Fatalf("the stream holds event INSERTs of %v and %d other records; want %v and the user's (guards included)", types, others, want)
	}

	m := newMoto(t, "default")
	var log bytes.Buffer
	resp, err := m.handler(t, &log, m.endpoint, "default")(ctx, batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler: %v, failures %v; log %s", err, failures(resp), log.String())
	}
	checkDelivered(t, m.receive(t), wantDelivered(t, batch, ids...))
	if log.Len() != 0 {
		t.Errorf("logged %q, want nothing", log.String())
	}
}

// readStream reads every record of the stream, shard by shard, and
// returns them as Lambda delivers them to a function.
func readStream(t *testing.T, arn string) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	sc := dynamodbstreams.New(dynamodbstreams.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(dynamotest.Endpoint(t)),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	desc, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var recs []any
	for _, shard := range desc.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(arn), ShardId: shard.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		for iter := it.ShardIterator; iter != nil; {
			out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				recs = append(recs, lambdaRecord(r, arn))
			}
			if len(out.Records) == 0 {
				break // an open shard's iterator never ends
			}
			iter = out.NextShardIterator
		}
	}
	b, err := json.Marshal(map[string]any{"Records": recs})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("the records in Lambda's shape do not decode: %v\n%s", err, b)
	}
	return ev
}

// lambdaRecord is a stream record in the JSON of Lambda's DynamoDB event:
// GetRecords' own fields, and the stream's ARN.
func lambdaRecord(r streamtypes.Record, arn string) map[string]any {
	d := r.Dynamodb
	change := map[string]any{
		"Keys":           image(d.Keys),
		"SequenceNumber": aws.ToString(d.SequenceNumber),
		"SizeBytes":      aws.ToInt64(d.SizeBytes),
		"StreamViewType": string(d.StreamViewType),
	}
	if d.ApproximateCreationDateTime != nil {
		change["ApproximateCreationDateTime"] = d.ApproximateCreationDateTime.Unix()
	}
	if d.NewImage != nil {
		change["NewImage"] = image(d.NewImage)
	}
	if d.OldImage != nil {
		change["OldImage"] = image(d.OldImage)
	}
	return map[string]any{
		"eventID": aws.ToString(r.EventID), "eventName": string(r.EventName), "eventVersion": aws.ToString(r.EventVersion),
		"eventSource": aws.ToString(r.EventSource), "awsRegion": aws.ToString(r.AwsRegion), "dynamodb": change, "eventSourceARN": arn,
	}
}

func image(m map[string]streamtypes.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = attr(v)
	}
	return out
}

// attr is an attribute value in DynamoDB's JSON ({"S": "…"}, …).
func attr(v streamtypes.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *streamtypes.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *streamtypes.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *streamtypes.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *streamtypes.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *streamtypes.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *streamtypes.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *streamtypes.AttributeValueMemberBS:
		var bs []string
		for _, b := range v.Value {
			bs = append(bs, base64.StdEncoding.EncodeToString(b))
		}
		return map[string]any{"BS": bs}
	case *streamtypes.AttributeValueMemberL:
		var l []any
		for _, e := range v.Value {
			l = append(l, attr(e))
		}
		return map[string]any{"L": l}
	case *streamtypes.AttributeValueMemberM:
		return map[string]any{"M": image(v.Value)}
	default:
		panic(fmt.Sprintf("attribute value %T", v))
	}
}
