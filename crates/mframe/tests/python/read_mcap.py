"""Reads an MCAP file with Foxglove's `mcap` package (from PyPI) and prints,
as one JSON object, everything the export tests check: the header, the
metadata records, the schemas and channels, every message (its data in hex,
byte for byte) and the summary's statistics.

Usage: read_mcap.py FILE.mcap
"""

import json
import sys

from mcap.reader import make_reader


def main(path):
    out = {"metadata": {}, "channels": {}, "messages": []}
    with open(path, "rb") as f:
        reader = make_reader(f)
        header = reader.get_header()
        out["header"] = {"profile": header.profile, "library": header.library}
        for record in reader.iter_metadata():
            out["metadata"][record.name] = dict(record.metadata)
        summary = reader.get_summary()
        stats = summary.statistics
        out["statistics"] = {
            "message_count": stats.message_count,
            "channel_count": stats.channel_count,
            "chunk_count": stats.chunk_count,
            "message_start_time": stats.message_start_time,
            "message_end_time": stats.message_end_time,
        }
        for channel_id, channel in summary.channels.items():
            schema = summary.schemas.get(channel.schema_id)
            out["channels"][str(channel_id)] = {
                "topic": channel.topic,
                "message_encoding": channel.message_encoding,
                "metadata": dict(channel.metadata),
                "schema_name": schema.name if schema else None,
                "schema_encoding": schema.encoding if schema else None,
                "schema_data": schema.data.decode("utf-8") if schema else None,
            }
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            out["messages"].append(
                {
                    "channel": channel.id,
                    "topic": channel.topic,
                    "sequence": message.sequence,
                    "log_time": message.log_time,
                    "publish_time": message.publish_time,
                    "data": message.data.hex(),
                }
            )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
