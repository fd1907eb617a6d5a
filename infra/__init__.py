"""The CDK app of PRME Cloud: one stack composed of one construct per concern."""
