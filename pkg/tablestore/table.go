package tablestore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The facts of the table, in one place. The tests create their tables from
// TableDefinition, and template.yaml's AWS::DynamoDB::Table must say the
// same; a test of the template compares the two. What it should compare:
//
//	KeySchema                  pk HASH, sk RANGE
//	AttributeDefinitions       pk, sk, gsi1pk, gsi1sk, all S
//	BillingMode                PAY_PER_REQUEST
//	GlobalSecondaryIndexes     one, GSI1 ("gsi1"): gsi1pk HASH, gsi1sk RANGE, Projection ALL
//	TimeToLiveSpecification    AttributeName TTLAttribute ("expire_at"), Enabled true
//
// CreateTableInput cannot carry TTL (DynamoDB sets it with a separate
// UpdateTimeToLive call, which CreateTable makes), hence the constant.
// Settings that do not change the data model (point-in-time recovery,
// encryption, deletion protection, tags) are the template's business.
const (
	// GSI1 is the one global secondary index: gsi1pk names a list (USERS,
	// ORGS, KEYS, MEMBERS#<org>, MEMBERSHIPS#<user>), gsi1sk orders it.
	GSI1 = "gsi1"
	// TTLAttribute holds the epoch second after which DynamoDB may delete an
	// item: set on token records and revocation entries.
	TTLAttribute = "expire_at"
)

// TableDefinition returns the CreateTableInput of the Latchkey table named
// name: on-demand billing, keys pk/sk and the gsi1 index.
func TableDefinition(name string) *dynamodb.CreateTableInput {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			s("pk"), s("sk"), s("gsi1pk"), s("gsi1sk"),
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(GSI1),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("gsi1pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("gsi1sk"), KeyType: types.KeyTypeRange},
			},
			// ALL, so that a list page is one Query with no follow-up reads.
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	}
}
