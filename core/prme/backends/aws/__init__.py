"""The AWS backend: DynamoDB ledger, OpenSearch index, SQS work queue (boto3 / opensearch-py)."""
