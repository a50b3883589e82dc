var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });

// bench/jobs/window-count.ts
import { defineJob, TumblingEventTimeWindows, WatermarkStrategy } from "file:///work/main/dist/index.js";

// bench/workloads.ts
import { writeSync } from "node:fs";
import { threadId } from "node:worker_threads";
var FULL_SIZES = {
  "map-filter": { n: 1e7, keys: 0 },
  "word-count": { n: 5e6, keys: 1e6 },
  "window-count": { n: 5e6, keys: 1e4 }
};
function sizeFromArgs(job, args) {
  const d = FULL_SIZES[job];
  const n = args[0] === void 0 ? d.n : Number(args[0]);
  const keys = args[1] === void 0 ? d.keys : Number(args[1]);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${job}: record count must be a non-negative integer, got ${args[0]}`);
  if (!Number.isSafeInteger(keys) || keys < 0 || job !== "map-filter" && keys < 1) throw new RangeError(`${job}: key count must be a positive integer, got ${args[1]}`);
  const dist = args[2];
  if (dist === void 0) return { n, keys };
  if (dist !== "uniform" && dist !== "zipf") throw new RangeError(`${job}: key distribution must be uniform or zipf, got ${dist}`);
  return { n, keys, dist };
}
__name(sizeFromArgs, "sizeFromArgs");
var SEED_C = 11;
var BASE_TS = 17e11;
var RECORDS_PER_MS = 100;
var DISORDER_MS = 200;
var OUT_OF_ORDERNESS_MS = 200;
var WINDOW_MS = 1e3;
var genC = /* @__PURE__ */ __name((keys) => (i, rng) => ({
  key: "k" + rng.int(keys),
  ts: BASE_TS + Math.floor(i / RECORDS_PER_MS) + rng.int(DISORDER_MS)
}), "genC");
var WindowCountAccumulator = class {
  static {
    __name(this, "WindowCountAccumulator");
  }
  windows = 0;
  sumCounts = 0;
  checksum = 0;
  add(r) {
    this.windows++;
    this.sumCounts += r.count;
    const keyNo = Number(r.key.slice(1)) + 1;
    const windowNo = (r.start - BASE_TS) / WINDOW_MS + 1;
    this.checksum += r.count * keyNo * windowNo;
  }
  result() {
    return { windows: this.windows, sumCounts: this.sumCounts, checksum: this.checksum };
  }
};
var PARTIAL_MARK = "@@weir-bench-partial ";
var instances = 0;
function partialSink(acc) {
  const instance = `${process.pid}.${threadId}.${instances++}`;
  return {
    invoke(v) {
      acc.add(v);
    },
    finish() {
      writeSync(2, PARTIAL_MARK + JSON.stringify({ instance, result: acc.result(), at: performance.timeOrigin + performance.now() }) + "\n");
    }
  };
}
__name(partialSink, "partialSink");

// bench/jobs/window-count.ts
var count = {
  createAccumulator: /* @__PURE__ */ __name(() => 0, "createAccumulator"),
  add: /* @__PURE__ */ __name((_r, acc) => acc + 1, "add"),
  getResult: /* @__PURE__ */ __name((acc) => acc, "getResult")
};
var window_count_default = defineJob((env, args) => {
  const { n, keys } = sizeFromArgs("window-count", args);
  env.setJobName("bench window-count");
  env.fromGenerator(genC(keys), { count: n, seed: SEED_C }).name("events").assignTimestampsAndWatermarks(
    WatermarkStrategy.forBoundedOutOfOrderness(OUT_OF_ORDERNESS_MS).withTimestampAssigner((r) => r.ts)
  ).keyBy((r) => r.key).window(TumblingEventTimeWindows.of(WINDOW_MS)).aggregate(count, {
    process(key, ctx, counts, out) {
      out.collect({ key, start: ctx.window.start, count: counts[0] });
    }
  }).uid("window counts").addSink(partialSink(new WindowCountAccumulator())).name("check windows");
});
export {
  window_count_default as default
};
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiLi4vLi4vd29yay9tYWluL2JlbmNoL2pvYnMvd2luZG93LWNvdW50LnRzIiwgIi4uLy4uL3dvcmsvbWFpbi9iZW5jaC93b3JrbG9hZHMudHMiXSwKICAibWFwcGluZ3MiOiAiOzs7O0FBS0EsU0FBUyxXQUFXLDBCQUEwQix5QkFBaUQ7OztBQ0cvRixTQUFTLGlCQUFpQjtBQUMxQixTQUFTLGdCQUFnQjtBQThCbEIsSUFBTSxhQUFrQztBQUFBLEVBQzdDLGNBQWMsRUFBRSxHQUFHLEtBQVksTUFBTSxFQUFFO0FBQUEsRUFDdkMsY0FBYyxFQUFFLEdBQUcsS0FBVyxNQUFNLElBQVU7QUFBQSxFQUM5QyxnQkFBZ0IsRUFBRSxHQUFHLEtBQVcsTUFBTSxJQUFPO0FBQy9DO0FBU08sU0FBUyxhQUFhLEtBQVksTUFBK0I7QUFDdEUsUUFBTSxJQUFJLFdBQVcsR0FBRztBQUN4QixRQUFNLElBQUksS0FBSyxDQUFDLE1BQU0sU0FBWSxFQUFFLElBQUksT0FBTyxLQUFLLENBQUMsQ0FBQztBQUN0RCxRQUFNLE9BQU8sS0FBSyxDQUFDLE1BQU0sU0FBWSxFQUFFLE9BQU8sT0FBTyxLQUFLLENBQUMsQ0FBQztBQUM1RCxNQUFJLENBQUMsT0FBTyxjQUFjLENBQUMsS0FBSyxJQUFJLEVBQUcsT0FBTSxJQUFJLFdBQVcsR0FBRyxHQUFHLHNEQUFzRCxLQUFLLENBQUMsQ0FBQyxFQUFFO0FBQ2pJLE1BQUksQ0FBQyxPQUFPLGNBQWMsSUFBSSxLQUFLLE9BQU8sS0FBTSxRQUFRLGdCQUFnQixPQUFPLEVBQUksT0FBTSxJQUFJLFdBQVcsR0FBRyxHQUFHLCtDQUErQyxLQUFLLENBQUMsQ0FBQyxFQUFFO0FBQ3RLLFFBQU0sT0FBTyxLQUFLLENBQUM7QUFDbkIsTUFBSSxTQUFTLE9BQVcsUUFBTyxFQUFFLEdBQUcsS0FBSztBQUN6QyxNQUFJLFNBQVMsYUFBYSxTQUFTLE9BQVEsT0FBTSxJQUFJLFdBQVcsR0FBRyxHQUFHLG1EQUFtRCxJQUFJLEVBQUU7QUFDL0gsU0FBTyxFQUFFLEdBQUcsTUFBTSxLQUFLO0FBQ3pCO0FBVmdCO0FBNkhULElBQU0sU0FBUztBQUVmLElBQU0sVUFBVTtBQUVoQixJQUFNLGlCQUFpQjtBQUV2QixJQUFNLGNBQWM7QUFFcEIsSUFBTSxzQkFBc0I7QUFDNUIsSUFBTSxZQUFZO0FBRWxCLElBQU0sT0FBTyx3QkFBQyxTQUFpQixDQUFDLEdBQVcsU0FBb0I7QUFBQSxFQUNwRSxLQUFLLE1BQU0sSUFBSSxJQUFJLElBQUk7QUFBQSxFQUN2QixJQUFJLFVBQVUsS0FBSyxNQUFNLElBQUksY0FBYyxJQUFJLElBQUksSUFBSSxXQUFXO0FBQ3BFLElBSG9CO0FBTWIsSUFBTSx5QkFBTixNQUFrRTtBQUFBLEVBbE16RSxPQWtNeUU7QUFBQTtBQUFBO0FBQUEsRUFDdkUsVUFBVTtBQUFBLEVBQ1YsWUFBWTtBQUFBLEVBQ1osV0FBVztBQUFBLEVBQ1gsSUFBSSxHQUF1QjtBQUN6QixTQUFLO0FBQ0wsU0FBSyxhQUFhLEVBQUU7QUFDcEIsVUFBTSxRQUFRLE9BQU8sRUFBRSxJQUFJLE1BQU0sQ0FBQyxDQUFDLElBQUk7QUFDdkMsVUFBTSxZQUFZLEVBQUUsUUFBUSxXQUFXLFlBQVk7QUFDbkQsU0FBSyxZQUFZLEVBQUUsUUFBUSxRQUFRO0FBQUEsRUFDckM7QUFBQSxFQUNBLFNBQWlCO0FBQ2YsV0FBTyxFQUFFLFNBQVMsS0FBSyxTQUFTLFdBQVcsS0FBSyxXQUFXLFVBQVUsS0FBSyxTQUFTO0FBQUEsRUFDckY7QUFDRjtBQTZETyxJQUFNLGVBQWU7QUF3RDVCLElBQUksWUFBWTtBQVVULFNBQVMsWUFBZSxLQUE2RDtBQUMxRixRQUFNLFdBQVcsR0FBRyxRQUFRLEdBQUcsSUFBSSxRQUFRLElBQUksV0FBVztBQUMxRCxTQUFPO0FBQUEsSUFDTCxPQUFPLEdBQU07QUFDWCxVQUFJLElBQUksQ0FBQztBQUFBLElBQ1g7QUFBQSxJQUNBLFNBQVM7QUFFUCxnQkFBVSxHQUFHLGVBQWUsS0FBSyxVQUFVLEVBQUUsVUFBVSxRQUFRLElBQUksT0FBTyxHQUFHLElBQUksWUFBWSxhQUFhLFlBQVksSUFBSSxFQUFFLENBQUMsSUFBSSxJQUFJO0FBQUEsSUFDdkk7QUFBQSxFQUNGO0FBQ0Y7QUFYZ0I7OztBRHBVaEIsSUFBTSxRQUFpRDtBQUFBLEVBQ3JELG1CQUFtQiw2QkFBTSxHQUFOO0FBQUEsRUFDbkIsS0FBSyx3QkFBQyxJQUFJLFFBQVEsTUFBTSxHQUFuQjtBQUFBLEVBQ0wsV0FBVyx3QkFBQyxRQUFRLEtBQVQ7QUFDYjtBQUVBLElBQU8sdUJBQVEsVUFBVSxDQUFDLEtBQUssU0FBUztBQUN0QyxRQUFNLEVBQUUsR0FBRyxLQUFLLElBQUksYUFBYSxnQkFBZ0IsSUFBSTtBQUNyRCxNQUFJLFdBQVcsb0JBQW9CO0FBQ25DLE1BQ0csY0FBYyxLQUFLLElBQUksR0FBRyxFQUFFLE9BQU8sR0FBRyxNQUFNLE9BQU8sQ0FBQyxFQUNwRCxLQUFLLFFBQVEsRUFDYjtBQUFBLElBQ0Msa0JBQWtCLHlCQUErQixtQkFBbUIsRUFBRSxzQkFBc0IsQ0FBQyxNQUFNLEVBQUUsRUFBRTtBQUFBLEVBQ3pHLEVBQ0MsTUFBTSxDQUFDLE1BQU0sRUFBRSxHQUFHLEVBQ2xCLE9BQU8seUJBQXlCLEdBQUcsU0FBUyxDQUFDLEVBQzdDLFVBQVUsT0FBTztBQUFBLElBQ2hCLFFBQVEsS0FBYSxLQUFLLFFBQVEsS0FBSztBQUNyQyxVQUFJLFFBQVEsRUFBRSxLQUFLLE9BQU8sSUFBSSxPQUFPLE9BQU8sT0FBTyxPQUFPLENBQUMsRUFBRyxDQUF3QjtBQUFBLElBQ3hGO0FBQUEsRUFDRixDQUFDLEVBQ0EsSUFBSSxlQUFlLEVBQ25CLFFBQVEsWUFBWSxJQUFJLHVCQUF1QixDQUFDLENBQUMsRUFDakQsS0FBSyxlQUFlO0FBQ3pCLENBQUM7IiwKICAibmFtZXMiOiBbXQp9Cg==
