"""The fleet store: one store per job and environment shared through Redis, so that one
process of a fleet compiles and every other replays (docs/fleet.md)."""

from dynamo_replay.fleet.url import FleetURL, is_fleet_url, parse_fleet_url

__all__ = ["FleetURL", "fleet_capture", "fleet_replay", "is_fleet_url", "parse_fleet_url"]


def __getattr__(name: str) -> object:
    """fleet_replay and fleet_capture import the Redis client (and capture and replay) when
    first used: the URL helpers and the CLI's parser need neither."""
    if name in ("fleet_replay", "fleet_capture"):
        try:
            from dynamo_replay.fleet import session
        except ModuleNotFoundError as error:
            if error.name != "redis":
                raise
            raise ImportError(
                "dynamo-replay: a redis:// store needs the Redis client: pip install "
                "'dynamo-replay[fleet]' (or: pip install redis)"
            ) from None
        return getattr(session, name)
    raise AttributeError(name)
