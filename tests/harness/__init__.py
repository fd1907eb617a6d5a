"""What the tests share: local AWS, engines, HTTP and Lambda harnesses, named by what they provide."""
