//! NATS identities for authentication tests, made with the `nkeys` crate:
//! a user NKey (its seed for the client, its public key for the server's
//! `authorization`), and a decentralized-auth setup (operator, account and
//! user JWTs signed with their NKeys, as `nsc` makes them) with the user's
//! `.creds` file.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use nkeys::KeyPair;

/// A user NKey.
///
/// ```
/// use messageframe_testkit::NkeyUser;
///
/// let user = NkeyUser::generate();
/// assert!(user.public_key().starts_with('U'));
/// assert!(user.seed().starts_with("SU"));
/// ```
#[derive(Debug)]
pub struct NkeyUser {
    key: KeyPair,
}

impl NkeyUser {
    /// A new random user key.
    #[must_use]
    pub fn generate() -> NkeyUser {
        NkeyUser {
            key: KeyPair::new_user(),
        }
    }

    /// The public key (`U…`): what the server's configuration lists.
    #[must_use]
    pub fn public_key(&self) -> String {
        self.key.public_key()
    }

    /// The seed (`SU…`): the secret the client signs with.
    #[must_use]
    pub fn seed(&self) -> String {
        self.key.seed().expect("a generated key has a seed")
    }
}

/// Decentralized authentication: an operator, one account it signed, one
/// user the account signed. The server trusts the operator and has the
/// account's JWT preloaded (`resolver: MEMORY`); the client logs in with
/// the user's `.creds` file.
///
/// ```
/// use messageframe_testkit::Operator;
///
/// let operator = Operator::generate();
/// assert!(operator.creds().contains("BEGIN NATS USER JWT"));
/// ```
#[derive(Debug)]
pub struct Operator {
    operator_jwt: String,
    account_public: String,
    account_jwt: String,
    user_jwt: String,
    user_seed: String,
}

impl Operator {
    /// New keys and JWTs.
    #[must_use]
    pub fn generate() -> Operator {
        let operator = KeyPair::new_operator();
        let account = KeyPair::new_account();
        let user = KeyPair::new_user();
        let operator_jwt = jwt(
            &operator,
            &operator.public_key(),
            "mf-operator",
            r#"{"type":"operator","version":2}"#,
        );
        let account_jwt = jwt(
            &operator,
            &account.public_key(),
            "mf-account",
            r#"{"limits":{"subs":-1,"data":-1,"payload":-1,"imports":-1,"exports":-1,"wildcards":true,"conn":-1,"leaf":-1},"default_permissions":{"pub":{},"sub":{}},"type":"account","version":2}"#,
        );
        let user_jwt = jwt(
            &account,
            &user.public_key(),
            "mf-user",
            r#"{"pub":{},"sub":{},"subs":-1,"data":-1,"payload":-1,"type":"user","version":2}"#,
        );
        Operator {
            operator_jwt,
            account_public: account.public_key(),
            account_jwt,
            user_jwt,
            user_seed: user.seed().expect("a generated key has a seed"),
        }
    }

    /// The user's `.creds` file, as `nsc` writes it.
    #[must_use]
    pub fn creds(&self) -> String {
        format!(
            "-----BEGIN NATS USER JWT-----\n{}\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\
             NKEY Seed printed below can be used to sign and prove identity.\n\
             NKEYs are sensitive and should be treated as secrets.\n\n\
             -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n\n\
             *************************************************************\n",
            self.user_jwt, self.user_seed
        )
    }

    /// The server configuration lines: trusted operator, memory resolver
    /// with the account preloaded.
    pub(crate) fn server_config(&self) -> String {
        let mut c = String::new();
        let _ = writeln!(c, "operator: {:?}", self.operator_jwt);
        let _ = writeln!(c, "resolver: MEMORY");
        let _ = writeln!(
            c,
            "resolver_preload: {{ {}: {:?} }}",
            self.account_public, self.account_jwt
        );
        c
    }
}

/// A JWT of `subject` signed by `issuer` (the nats-io/jwt v2 layout: the
/// claims' `nats` member is `nats`).
fn jwt(issuer: &KeyPair, subject: &str, name: &str, nats: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(r#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let iat = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The id only has to be unique; nats-server does not recompute it.
    let jti = URL_SAFE_NO_PAD.encode(format!("{subject}-{iat}-{name}"));
    let claims = format!(
        r#"{{"jti":"{jti}","iat":{iat},"iss":"{}","name":"{name}","sub":"{subject}","nats":{nats}}}"#,
        issuer.public_key()
    );
    let signing_input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims));
    let signature = issuer
        .sign(signing_input.as_bytes())
        .expect("sign a JWT with an NKey");
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
}
