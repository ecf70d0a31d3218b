//! Integration tests against real nats-server processes (never a mock),
//! started by the tests on loopback ports through `messageframe-testkit`.
//! nats-server must be installed (`apt-get install -y nats-server`; .ci/run
//! does it): without it these tests fail, they never skip.
//!
//! One test binary, so that the dependencies are linked once; one module per
//! subject, sharing `support`.

mod cluster;
mod jetstream;
mod limits;
mod mqtt;
mod pubsub;
mod reconnect;
mod support;
