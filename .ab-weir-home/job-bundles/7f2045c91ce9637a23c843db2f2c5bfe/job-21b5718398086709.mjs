var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });

// bench/jobs/word-count.ts
import {
  defineJob,
  ValueStateDescriptor
} from "file:///work/main/dist/index.js";

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
var SEED_B = 7;
var genB = /* @__PURE__ */ __name((keys) => (_i, rng) => ({ key: "w" + rng.int(keys), count: 1 }), "genB");
var ZIPF_S = 1;
function genBZipf(keys) {
  const cdf = new Float64Array(keys);
  let sum = 0;
  for (let k = 0; k < keys; k++) cdf[k] = sum += 1 / Math.pow(k + 1, ZIPF_S);
  for (let k = 0; k < keys; k++) cdf[k] /= sum;
  return (_i, rng) => {
    const u = rng.next();
    let lo = 0;
    let hi = keys - 1;
    while (lo < hi) {
      const mid = lo + hi >>> 1;
      if (cdf[mid] > u) hi = mid;
      else lo = mid + 1;
    }
    return { key: "w" + lo, count: 1 };
  };
}
__name(genBZipf, "genBZipf");
var genBOf = /* @__PURE__ */ __name((size) => size.dist === "zipf" ? genBZipf(size.keys) : genB(size.keys), "genBOf");
var WordCountAccumulator = class {
  static {
    __name(this, "WordCountAccumulator");
  }
  outputs = 0;
  sumCounts = 0;
  sumSquares = 0;
  add(r) {
    this.outputs++;
    this.sumCounts += r.count;
    this.sumSquares += r.count * r.count;
  }
  result() {
    return { outputs: this.outputs, sumCounts: this.sumCounts, sumSquares: this.sumSquares };
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

// bench/jobs/word-count.ts
var RunningCount = class {
  static {
    __name(this, "RunningCount");
  }
  count;
  open(ctx) {
    this.count = ctx.getState(new ValueStateDescriptor("count", { defaultValue: 0 }));
  }
  processElement(r, _ctx, out) {
    const c = this.count.value() + r.count;
    this.count.update(c);
    out.collect({ key: r.key, count: c });
  }
};
var word_count_default = defineJob((env, args) => {
  const size = sizeFromArgs("word-count", args);
  env.setJobName("bench word-count");
  env.fromGenerator(genBOf(size), { count: size.n, seed: SEED_B }).name("words").keyBy((r) => r.key).process(new RunningCount()).uid("counts").addSink(partialSink(new WordCountAccumulator())).name("check counts");
});
export {
  word_count_default as default
};
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsiLi4vLi4vd29yay9tYWluL2JlbmNoL2pvYnMvd29yZC1jb3VudC50cyIsICIuLi8uLi93b3JrL21haW4vYmVuY2gvd29ya2xvYWRzLnRzIl0sCiAgIm1hcHBpbmdzIjogIjs7OztBQU1BO0FBQUEsRUFDRTtBQUFBLEVBQVc7QUFBQSxPQUNOOzs7QUNBUCxTQUFTLGlCQUFpQjtBQUMxQixTQUFTLGdCQUFnQjtBQThCbEIsSUFBTSxhQUFrQztBQUFBLEVBQzdDLGNBQWMsRUFBRSxHQUFHLEtBQVksTUFBTSxFQUFFO0FBQUEsRUFDdkMsY0FBYyxFQUFFLEdBQUcsS0FBVyxNQUFNLElBQVU7QUFBQSxFQUM5QyxnQkFBZ0IsRUFBRSxHQUFHLEtBQVcsTUFBTSxJQUFPO0FBQy9DO0FBU08sU0FBUyxhQUFhLEtBQVksTUFBK0I7QUFDdEUsUUFBTSxJQUFJLFdBQVcsR0FBRztBQUN4QixRQUFNLElBQUksS0FBSyxDQUFDLE1BQU0sU0FBWSxFQUFFLElBQUksT0FBTyxLQUFLLENBQUMsQ0FBQztBQUN0RCxRQUFNLE9BQU8sS0FBSyxDQUFDLE1BQU0sU0FBWSxFQUFFLE9BQU8sT0FBTyxLQUFLLENBQUMsQ0FBQztBQUM1RCxNQUFJLENBQUMsT0FBTyxjQUFjLENBQUMsS0FBSyxJQUFJLEVBQUcsT0FBTSxJQUFJLFdBQVcsR0FBRyxHQUFHLHNEQUFzRCxLQUFLLENBQUMsQ0FBQyxFQUFFO0FBQ2pJLE1BQUksQ0FBQyxPQUFPLGNBQWMsSUFBSSxLQUFLLE9BQU8sS0FBTSxRQUFRLGdCQUFnQixPQUFPLEVBQUksT0FBTSxJQUFJLFdBQVcsR0FBRyxHQUFHLCtDQUErQyxLQUFLLENBQUMsQ0FBQyxFQUFFO0FBQ3RLLFFBQU0sT0FBTyxLQUFLLENBQUM7QUFDbkIsTUFBSSxTQUFTLE9BQVcsUUFBTyxFQUFFLEdBQUcsS0FBSztBQUN6QyxNQUFJLFNBQVMsYUFBYSxTQUFTLE9BQVEsT0FBTSxJQUFJLFdBQVcsR0FBRyxHQUFHLG1EQUFtRCxJQUFJLEVBQUU7QUFDL0gsU0FBTyxFQUFFLEdBQUcsTUFBTSxLQUFLO0FBQ3pCO0FBVmdCO0FBK0RULElBQU0sU0FBUztBQUVmLElBQU0sT0FBTyx3QkFBQyxTQUFpQixDQUFDLElBQVksU0FBb0IsRUFBRSxLQUFLLE1BQU0sSUFBSSxJQUFJLElBQUksR0FBRyxPQUFPLEVBQUUsSUFBeEY7QUFHYixJQUFNLFNBQVM7QUFRZixTQUFTLFNBQVMsTUFBNkM7QUFDcEUsUUFBTSxNQUFNLElBQUksYUFBYSxJQUFJO0FBQ2pDLE1BQUksTUFBTTtBQUNWLFdBQVMsSUFBSSxHQUFHLElBQUksTUFBTSxJQUFLLEtBQUksQ0FBQyxJQUFJLE9BQU8sSUFBSSxLQUFLLElBQUksSUFBSSxHQUFHLE1BQU07QUFDekUsV0FBUyxJQUFJLEdBQUcsSUFBSSxNQUFNLElBQUssS0FBSSxDQUFDLEtBQU07QUFDMUMsU0FBTyxDQUFDLElBQUksUUFBUTtBQUNsQixVQUFNLElBQUksSUFBSSxLQUFLO0FBQ25CLFFBQUksS0FBSztBQUNULFFBQUksS0FBSyxPQUFPO0FBQ2hCLFdBQU8sS0FBSyxJQUFJO0FBQ2QsWUFBTSxNQUFPLEtBQUssT0FBUTtBQUMxQixVQUFJLElBQUksR0FBRyxJQUFLLEVBQUcsTUFBSztBQUFBLFVBQ25CLE1BQUssTUFBTTtBQUFBLElBQ2xCO0FBQ0EsV0FBTyxFQUFFLEtBQUssTUFBTSxJQUFJLE9BQU8sRUFBRTtBQUFBLEVBQ25DO0FBQ0Y7QUFoQmdCO0FBbUJULElBQU0sU0FBUyx3QkFBQyxTQUFpRCxLQUFLLFNBQVMsU0FBUyxTQUFTLEtBQUssSUFBSSxJQUFJLEtBQUssS0FBSyxJQUFJLEdBQTdHO0FBR2YsSUFBTSx1QkFBTixNQUF3RDtBQUFBLEVBdEovRCxPQXNKK0Q7QUFBQTtBQUFBO0FBQUEsRUFDN0QsVUFBVTtBQUFBLEVBQ1YsWUFBWTtBQUFBLEVBQ1osYUFBYTtBQUFBLEVBQ2IsSUFBSSxHQUFlO0FBQ2pCLFNBQUs7QUFDTCxTQUFLLGFBQWEsRUFBRTtBQUNwQixTQUFLLGNBQWMsRUFBRSxRQUFRLEVBQUU7QUFBQSxFQUNqQztBQUFBLEVBQ0EsU0FBaUI7QUFDZixXQUFPLEVBQUUsU0FBUyxLQUFLLFNBQVMsV0FBVyxLQUFLLFdBQVcsWUFBWSxLQUFLLFdBQVc7QUFBQSxFQUN6RjtBQUNGO0FBMkdPLElBQU0sZUFBZTtBQXdENUIsSUFBSSxZQUFZO0FBVVQsU0FBUyxZQUFlLEtBQTZEO0FBQzFGLFFBQU0sV0FBVyxHQUFHLFFBQVEsR0FBRyxJQUFJLFFBQVEsSUFBSSxXQUFXO0FBQzFELFNBQU87QUFBQSxJQUNMLE9BQU8sR0FBTTtBQUNYLFVBQUksSUFBSSxDQUFDO0FBQUEsSUFDWDtBQUFBLElBQ0EsU0FBUztBQUVQLGdCQUFVLEdBQUcsZUFBZSxLQUFLLFVBQVUsRUFBRSxVQUFVLFFBQVEsSUFBSSxPQUFPLEdBQUcsSUFBSSxZQUFZLGFBQWEsWUFBWSxJQUFJLEVBQUUsQ0FBQyxJQUFJLElBQUk7QUFBQSxJQUN2STtBQUFBLEVBQ0Y7QUFDRjtBQVhnQjs7O0FEblVoQixJQUFNLGVBQU4sTUFBdUU7QUFBQSxFQVp2RSxPQVl1RTtBQUFBO0FBQUE7QUFBQSxFQUM3RDtBQUFBLEVBQ1IsS0FBSyxLQUFnQztBQUNuQyxTQUFLLFFBQVEsSUFBSSxTQUFTLElBQUkscUJBQTZCLFNBQVMsRUFBRSxjQUFjLEVBQUUsQ0FBQyxDQUFDO0FBQUEsRUFDMUY7QUFBQSxFQUNBLGVBQWUsR0FBUyxNQUFlLEtBQTRCO0FBQ2pFLFVBQU0sSUFBSSxLQUFLLE1BQU0sTUFBTSxJQUFLLEVBQUU7QUFDbEMsU0FBSyxNQUFNLE9BQU8sQ0FBQztBQUNuQixRQUFJLFFBQVEsRUFBRSxLQUFLLEVBQUUsS0FBSyxPQUFPLEVBQUUsQ0FBQztBQUFBLEVBQ3RDO0FBQ0Y7QUFFQSxJQUFPLHFCQUFRLFVBQVUsQ0FBQyxLQUFLLFNBQVM7QUFDdEMsUUFBTSxPQUFPLGFBQWEsY0FBYyxJQUFJO0FBQzVDLE1BQUksV0FBVyxrQkFBa0I7QUFDakMsTUFDRyxjQUFjLE9BQU8sSUFBSSxHQUFHLEVBQUUsT0FBTyxLQUFLLEdBQUcsTUFBTSxPQUFPLENBQUMsRUFDM0QsS0FBSyxPQUFPLEVBQ1osTUFBTSxDQUFDLE1BQVksRUFBRSxHQUFHLEVBQ3hCLFFBQVEsSUFBSSxhQUFhLENBQUMsRUFDMUIsSUFBSSxRQUFRLEVBQ1osUUFBUSxZQUFZLElBQUkscUJBQXFCLENBQUMsQ0FBQyxFQUMvQyxLQUFLLGNBQWM7QUFDeEIsQ0FBQzsiLAogICJuYW1lcyI6IFtdCn0K
