//! `offsetkeeper`: the operator tool for Kafka offsets kept in ZooKeeper. Parsing and printing
//! live here; the work is the engine's (crate `offsetkeeper`), and the pure parts (plans,
//! file formats, time arguments) are in modules with their own tests.

mod args;
mod commands;
mod compare;
mod datetime;
mod files;
mod kerberos;
mod keystores;
mod migrate;
mod output;
mod plan;
mod prometheus;

use std::io::Write;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use args::Cli;

/// `compare`'s exit status when the stores differ: the command worked, its answer is no.
pub const DIFFERS: u8 = 3;

/// Why the tool stops with a non-zero status: the message is printed as one line.
#[derive(Debug)]
pub struct Failure {
    /// 1: an operation failed; 2: the command line is wrong; 3 ([`DIFFERS`]): `compare` found
    /// the stores differ.
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// An operation failed: a server, a file, a refused reset.
    pub fn failed(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: message.into(),
        }
    }

    /// The command line is wrong or incomplete.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    /// `compare` found the stores differ: not an error, so its line has no `error: `.
    pub fn differs(message: impl Into<String>) -> Failure {
        Failure {
            code: DIFFERS,
            message: message.into(),
        }
    }
}

impl From<offsetkeeper::Error> for Failure {
    fn from(err: offsetkeeper::Error) -> Failure {
        Failure::failed(err.to_string())
    }
}

/// An engine error's message; for a refused argument without the "invalid argument: " prefix,
/// which the CLI's own context already gives.
pub fn reason(err: offsetkeeper::Error) -> String {
    match err {
        offsetkeeper::Error::InvalidArgument(message) => message,
        other => other.to_string(),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            return match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = err.print();
                    ExitCode::SUCCESS
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = err.print();
                    ExitCode::from(2)
                }
                _ => {
                    eprintln!("{} (see --help)", clap_message(&err.to_string()));
                    ExitCode::from(2)
                }
            };
        }
    };
    init_logging(cli.verbose);
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if failure.code == DIFFERS {
                eprintln!("{}", one_line(&failure.message));
            } else {
                eprintln!("error: {}", one_line(&failure.message));
            }
            ExitCode::from(failure.code)
        }
    }
}

/// clap's message without its usage block, on one line.
fn clap_message(rendered: &str) -> String {
    let lines: Vec<&str> = rendered
        .lines()
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    lines.join(" ")
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Warnings of the engine and the tool by default; -v, -vv, -vvv open everything up to info,
/// debug, trace. RUST_LOG, when set, wins.
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "off,offsetkeeper=warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default))
        .format(move |buf, record| {
            let level = match record.level() {
                log::Level::Warn => "warning".to_string(),
                other => other.as_str().to_ascii_lowercase(),
            };
            if verbose >= 2 {
                writeln!(buf, "{level} [{}]: {}", record.target(), record.args())
            } else {
                writeln!(buf, "{level}: {}", record.args())
            }
        })
        .init();
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: the following required arguments were not provided:\n  --topic <TOPIC>\n\nUsage: offsetkeeper reset --topic <TOPIC>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_message(rendered),
            "error: the following required arguments were not provided: --topic <TOPIC>"
        );
        assert_eq!(one_line("a\n  b\tc"), "a b c");
    }
}
